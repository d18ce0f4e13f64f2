import { runScript } from '../../sdk/runner';

// Cook raw shrimp on the Lumbridge range; bank what burns less than half the time.
await runScript(async ({ bot, sdk }) => {
  await bot.walkTo(3211, 3215);
  const range = sdk.findNearbyLoc(/^Cooking range$/);
  if (!range) throw new Error('range not found');
  await bot.useItemOnLoc(/Raw shrimps/, range);
  await sdk.waitForCondition(() => !sdk.findInventoryItem(/Raw shrimps/), 60_000);
}, { timeout: 120_000 });
