/** @skill mine-iron
 * Goal: mine iron at the Al Kharid mine and bank the ore, dropping gems
 * Preconditions: a pickaxe, Mining 15, 10 coins for the toll gate
 * Params: none
 * Result: iron ore in the Al Kharid bank
 * Tags: skill:mining, item:iron-ore, place:al-kharid
 * From: pickles/mine-iron
 */
import { runScript } from '../../sdk/runner';

await runScript(async ({ bot, sdk }) => {
  await bot.walkTo(3300, 3310);
  while (sdk.getInventory().length < 28) {
    const gem = sdk.findInventoryItem(/^Uncut /);
    if (gem) await bot.dropItem(gem);
    const rock = sdk.findNearbyLoc(/^Iron rocks$/);
    if (!rock) {
      await sdk.waitForTicks(3);
      continue;
    }
    await bot.mineRock(rock);
  }
  await bot.walkTo(3269, 3167);
  await bot.openBank();
  await bot.depositItem(/Iron ore/, -1);
}, { timeout: 300_000 });
