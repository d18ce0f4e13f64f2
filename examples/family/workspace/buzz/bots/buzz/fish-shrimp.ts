import { runScript } from '../../sdk/runner';

// Net shrimp at Lumbridge swamp until the backpack is full.
await runScript(async ({ bot, sdk }) => {
  await bot.walkTo(3241, 3150);
  while (sdk.getInventory().length < 28) {
    const spot = sdk.findNearbyNpc(/^Fishing spot$/);
    if (!spot) break;
    await bot.interactNpc(spot, 'Net');
    await sdk.waitForTicks(5);
  }
}, { timeout: 180_000 });
