import { runScript } from '../../sdk/runner';

await runScript(async ({ bot, sdk }) => {
  await bot.skipTutorial();
  console.log(sdk.getState()?.player);
}, { timeout: 60_000 });
