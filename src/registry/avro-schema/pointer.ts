/**
 * JSON pointers into a schema document, written as Avro's Java SchemaCompatibility writes them:
 * the root is "/" and every step adds "/<token>" ("/fields/1/type", "/2/items").
 */

export const ROOT_POINTER = '/';

export function childPointer(pointer: string, token: string | number): string {
  const escaped = String(token).replaceAll('~', '~0').replaceAll('/', '~1');
  return pointer === ROOT_POINTER ? `/${escaped}` : `${pointer}/${escaped}`;
}

/** The tokens of a pointer, unescaped; the root has none. */
export function pointerTokens(pointer: string): string[] {
  if (pointer === ROOT_POINTER || pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** A short rendering of a JSON value for error messages: long values are cut with an ellipsis. */
export function showJson(value: unknown, limit = 80): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}
