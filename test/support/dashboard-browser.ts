/**
 * Headless Chromium for the dashboard's checks: Debian's `chromium` package driven by
 * playwright-core (which ships no browser of its own). The sandbox is off because CI runs as root,
 * where Chromium refuses to start with it.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env['TRIBUTARY_CHROMIUM'] ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's package (apt-get install chromium), or point TRIBUTARY_CHROMIUM at a Chromium binary`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox'], timeout: 120_000 });
}

/** A page as wide as the dashboard's tables need, with a generous timeout for a loaded machine. */
export async function openPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  page.setDefaultTimeout(90_000);
  return page;
}

/** The loads page, whole, as a PNG at `path`. */
export async function screenshotLoads(page: Page, url: string, path: string): Promise<void> {
  await page.goto(`${url}/`, { waitUntil: 'load' });
  await page.screenshot({ path, fullPage: true });
}
