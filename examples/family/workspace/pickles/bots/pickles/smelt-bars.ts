import { runScript } from '../../sdk/runner';

// Smelt iron bars at the Al Kharid furnace from ore in the bank.
await runScript(async ({ bot, sdk }) => {
  await bot.openBank();
  await bot.withdrawItem(/Iron ore/, 28);
  await bot.walkTo(3275, 3186);
  const furnace = sdk.findNearbyLoc(/^Furnace$/);
  if (!furnace) throw new Error('no furnace in sight');
  await bot.smelt(furnace, 'Iron bar');
}, { timeout: 240_000 });
