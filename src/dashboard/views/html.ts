/**
 * Server-rendered HTML without a template engine: `html` escapes every interpolated value unless
 * it is already Html (a fragment built the same way), so text from load files, topic names or
 * error messages can never become markup.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlValue = Html | string | number | null | undefined | readonly HtmlValue[];

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[character] ?? character);
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let text = strings[0] ?? '';
  values.forEach((value, index) => (text += render(value) + (strings[index + 1] ?? '')));
  return new Html(text);
}

/** Markup the caller vouches for (fixed strings of this module's authors only). */
export function trusted(text: string): Html {
  return new Html(text);
}
