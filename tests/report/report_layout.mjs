// Reads the HTML report's layout in headless Chromium, at given widths, over
// the DevTools protocol on a pipe (no port, no network): the page is emulated
// at each width as a phone or desktop would show it, a script measures what a
// reader sees (page and box widths, tick and legend boxes), and, if asked, a
// screenshot of the summary and of the charts is written.
//
//   node report_layout.mjs CHROMIUM PROFILE_DIR OUT.json WIDTHS HTML... [--shots DIR]
//
// WIDTHS is a comma list ("1280,390"); OUT.json gets
// {"<html file>": {"<width>": {measurements}}}. Exit 0 when every page was
// measured, 1 (with one sentence on stderr) otherwise. --shots DIR writes, per
// page and width, NAME-summary-WIDTH.png (the summary, as the page opens) and
// NAME-charts-WIDTH.png (the three charts and their legends).
import { spawn } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';

const [chromium, profile, outPath, widthList, ...rest] = process.argv.slice(2);
const shotsAt = rest.indexOf('--shots');
const shots = shotsAt >= 0 ? rest[shotsAt + 1] : null;
const pages = shotsAt >= 0 ? rest.slice(0, shotsAt) : rest;
const widths = widthList.split(',').map(Number);

// What the reader sees, in CSS pixels; boxes are [left, top, right, bottom].
const measure = `(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const texts = (root, sel) => [...root.querySelectorAll(sel)].map(t => ({ text: t.textContent, box: box(t) }));
  const se = document.scrollingElement;
  const charts = {};
  for (const svg of document.querySelectorAll('svg.chart')) {
    if (!svg.getClientRects().length) continue;  // the drawing for the other width
    const holder = svg.parentElement;
    charts[svg.id.replace(/-narrow$/, '')] = { variant: svg.classList.contains('narrow') ? 'narrow' : 'wide', svg: box(svg), holder: box(holder), holderScroll: holder.scrollWidth, holderClient: holder.clientWidth,
      xTicks: texts(svg, 'text.x-tick'), yTicks: texts(svg, 'text.y-tick'), titles: texts(svg, 'text.axis-title') };
  }
  const tables = [...document.querySelectorAll('table')].map(t => ({ id: t.id, box: box(t) }));
  const legends = [...document.querySelectorAll('ul.legend')].map(ul => ({ id: ul.id, box: box(ul),
    items: [...ul.children].map(li => ({ text: li.textContent, box: box(li), scroll: li.scrollWidth, client: li.clientWidth })) }));
  const bars = [...document.querySelectorAll('.hbar > *')].map(e => ({ text: e.textContent, box: box(e) }));
  const summary = document.getElementById('summary');
  return { innerWidth: window.innerWidth, scrollWidth: se.scrollWidth, summary: box(summary),
           summaryScroll: summary.scrollWidth, summaryClient: summary.clientWidth, charts, tables, legends, bars };
})()`;

const child = spawn(chromium, ['--headless', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu',
  '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage', '--hide-scrollbars', '--user-data-dir=' + profile, 'about:blank'],
  { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
child.stdio[2].on('data', d => { stderr = (stderr + d).slice(-4000); });
const fail = why => { process.stderr.write(why + '\n'); child.kill('SIGKILL'); process.exit(1); };
const deadline = setTimeout(() => fail('Chromium did not finish within 120 s: ' + stderr.trim().split('\n').pop()), 120000);
child.on('exit', code => { if (!done) fail('Chromium exited (' + code + ') before the pages were measured: ' + stderr.trim().split('\n').pop()); });

let done = false, nextId = 1, buffer = '';
const waiting = new Map(), listeners = [];
child.stdio[4].on('data', chunk => {
  buffer += chunk.toString('utf8');
  let end;
  while ((end = buffer.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (msg.id && waiting.has(msg.id)) {
      const { resolve, reject } = waiting.get(msg.id);
      waiting.delete(msg.id);
      msg.error ? reject(new Error(msg.error.message)) : resolve(msg.result);
    } else {
      for (const l of listeners.splice(0)) if (!l(msg)) listeners.push(l);
    }
  }
});
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = nextId++;
  waiting.set(id, { resolve, reject });
  child.stdio[3].write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
});
const once = (sessionId, method) => new Promise(resolve =>
  listeners.push(m => (m.sessionId === sessionId && m.method === method ? (resolve(m.params), true) : false)));

const results = {};
try {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  await send('Page.enable', {}, sessionId);
  if (shots) mkdirSync(shots, { recursive: true });
  for (const page of pages) {
    results[page] = {};
    for (const width of widths) {
      const mobile = width < 600;
      const height = mobile ? 844 : 900;
      await send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile }, sessionId);
      const loaded = once(sessionId, 'Page.loadEventFired');
      await send('Page.navigate', { url: 'file://' + page }, sessionId);
      await loaded;
      const got = await send('Runtime.evaluate', { expression: measure, returnByValue: true }, sessionId);
      if (got.exceptionDetails) throw new Error(got.exceptionDetails.text);
      results[page][width] = got.result.value;
      if (shots) {
        // Two pictures a page: the summary as it opens, and the charts.
        const regions = await send('Runtime.evaluate', { returnByValue: true, expression: `(() => {
          const top = e => e.getBoundingClientRect().top + scrollY, bottom = e => e.getBoundingClientRect().bottom + scrollY;
          const first = document.getElementById('chart-cost-over-time').closest('.chart-box').previousElementSibling;
          return { summary: [0, bottom(document.getElementById('summary')) + 16],
                   charts: [top(first) - 8, bottom(document.getElementById('chart-idle-share')) + 16] };
        })()` }, sessionId);
        for (const [part, [y0, y1]] of Object.entries(regions.result.value)) {
          const clip = { x: 0, y: Math.floor(y0), width, height: Math.ceil(y1 - y0), scale: 1 };
          const { data } = await send('Page.captureScreenshot', { format: 'png', clip, captureBeyondViewport: true }, sessionId);
          writeFileSync(join(shots, `${basename(page, '.html')}-${part}-${width}.png`), Buffer.from(data, 'base64'));
        }
      }
    }
  }
  writeFileSync(outPath, JSON.stringify(results));
  done = true;
  await send('Browser.close').catch(() => {});
} catch (e) {
  fail('Reading the report in Chromium failed: ' + e.message);
}
clearTimeout(deadline);
setTimeout(() => { child.kill('SIGKILL'); process.exit(0); }, 2000).unref();
