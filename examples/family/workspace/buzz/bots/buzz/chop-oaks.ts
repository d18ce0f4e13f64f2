/** @skill chop-oaks
 * Goal: chop oaks west of Draynor and bank the logs
 * Preconditions: an axe, Woodcutting 15
 * Params: none
 * Result: logs in the bank
 * Tags: skill:woodcutting, item:oak-logs, place:draynor-village
 */
import { runScript } from '../../sdk/runner';

await runScript(async ({ bot, sdk }) => {
  for (let trip = 0; trip < 3; trip++) {
    while (sdk.getInventory().length < 28) {
      const oak = sdk.findNearbyLoc(/^Oak$/);
      if (!oak) {
        await bot.walkTo(3090, 3240);
        continue;
      }
      const chopped = await bot.chopTree(oak);
      if (!chopped.success) console.log('chop failed:', chopped.message);
    }
    await bot.walkTo(3092, 3245);
    await bot.openBank();
    await bot.depositItem(/Oak logs/, -1);
  }
}, { timeout: 300_000 });
