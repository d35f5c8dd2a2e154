/** The frame of every page of ours: title, navigation (ours and Bull Board's) and the styles. */
import { BULL_BOARD_PATH } from '../bull-board.js';
import type { PanelError } from '../panel.js';
import { formatPercent } from '../../audit/report.js';
import { Html, html, trusted } from './html.js';

export type PageName = 'loads' | 'audit' | 'groups';

const NAVIGATION: readonly { page: PageName | 'queues'; href: string; label: string }[] = [
  { page: 'loads', href: '/', label: 'Loads' },
  { page: 'audit', href: '/audit', label: 'Audit' },
  { page: 'groups', href: '/groups', label: 'Consumer groups' },
  { page: 'queues', href: BULL_BOARD_PATH, label: 'Queues (Bull Board)' },
];

const STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1f2933; background: #f5f7fa; }
header { background: #243b53; color: #fff; padding: 10px 24px; display: flex; gap: 24px; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
header a { color: #d9e2ec; text-decoration: none; }
header a.active { color: #fff; font-weight: 600; border-bottom: 2px solid #fff; }
main { padding: 16px 24px; }
section.panel { background: #fff; border: 1px solid #d9e2ec; border-radius: 6px; padding: 12px 16px; margin-bottom: 16px; }
section.panel h2 { font-size: 15px; margin: 0 0 8px; }
section.panel h3 { font-size: 14px; margin: 12px 0 6px; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 3px 12px 3px 0; border-bottom: 1px solid #eef2f7; vertical-align: top; }
th { font-weight: 600; color: #52606d; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.error { background: #fff5f5; border: 1px solid #f5a3a3; color: #8a1c1c; padding: 8px 12px; border-radius: 4px; }
.error code { font-weight: 600; }
.muted { color: #7b8794; }
.status { font-weight: 600; }
.status-OK { color: #1b7f3b; } .status-LOSS { color: #c62828; } .status-DUPLICATES { color: #d97706; }
.status-OPEN, .status-NO-AUDIT, .status-NOT-COUNTED, .status-UNAUDITED, .status-COMPACTED { color: #7b8794; }
svg text { font: 11px system-ui, sans-serif; fill: #52606d; }
.side-by-side { display: flex; gap: 32px; align-items: flex-start; flex-wrap: wrap; }
.legend { font-size: 12px; } .swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 8px; border-radius: 2px; }
form.range { margin-bottom: 12px; } form.range input { width: 200px; }
`;

export function page(active: PageName, title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${title} · Tributary</title>
<style>${trusted(STYLE)}</style>
</head>
<body>
<header><h1>Tributary</h1>${NAVIGATION.map((item) => html`<a href="${item.href}" class="${item.page === active ? 'active' : ''}" data-nav="${item.page}">${item.label}</a>`)}</header>
<main>
${body}
</main>
</body>
</html>
`;
}

/** A panel: its heading, then its content or the error that kept it empty. */
export function panel(id: string, title: string, content: Html | PanelError): Html {
  return html`<section class="panel" id="${id}" data-panel="${id}"><h2>${title}</h2>${content instanceof Html ? content : errorBox(content)}</section>`;
}

export function errorBox(error: PanelError): Html {
  return html`<div class="error" data-error="${error.code}">Cannot read ${error.source}: <code>${error.code}</code> ${error.message}</div>`;
}

/** A status word with its colour class (`NO AUDIT` → status-NO-AUDIT). */
export function statusCell(status: string): Html {
  return html`<td class="status status-${status.replace(/\s+/g, '-')}">${status}</td>`;
}

/** A percentage as the audit report prints it: never rounded to 100.00% unless it is exactly that. */
export function percent(value: number | null): string {
  return formatPercent(value === null ? null : value / 100);
}
