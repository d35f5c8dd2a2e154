/**
 * Finds where JSON text first breaks its grammar, because Node's JSON.parse often says only
 * "Unexpected token" without a position. Used only after JSON.parse has failed.
 *
 * Grammar (RFC 8259):
 *   text   := ws value ws
 *   value  := object | array | string | number | "true" | "false" | "null"
 *   object := "{" ws [ string ws ":" ws value ws { "," ws string ws ":" ws value ws } ] "}"
 *   array  := "[" ws [ value ws { "," ws value ws } ] "]"
 *   string := '"' { any code point ≥ U+0020 except '"' and '\' | "\" ( '"' | "\" | "/" | "b" | "f" |
 *             "n" | "r" | "t" | "u" 4×hex ) } '"'
 *   number := [ "-" ] ( "0" | [1-9] {digit} ) [ "." digit {digit} ] [ ("e" | "E") [ "+" | "-" ] digit {digit} ]
 *   ws     := { " " | "\t" | "\n" | "\r" }
 */

export interface JsonSyntaxError {
  /** Offset of the first offending character (the text's length when it ends too early). */
  readonly position: number;
  readonly line: number;
  readonly column: number;
  /** What the grammar allowed there and what was found, e.g. `expected a string key, found '}'`. */
  readonly problem: string;
}

/** The first syntax error in `text`, or undefined when it is well-formed JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | undefined {
  try {
    const scanner = new Scanner(text);
    scanner.text();
    return undefined;
  } catch (error) {
    if (!(error instanceof SyntaxStop)) throw error;
    const before = text.slice(0, error.position);
    const line = before.split('\n').length;
    const column = error.position - before.lastIndexOf('\n');
    return { position: error.position, line, column, problem: error.problem };
  }
}

/** Unwinds the scanner at the first error; never escapes findJsonSyntaxError. */
class SyntaxStop extends Error {
  constructor(
    readonly position: number,
    readonly problem: string,
  ) {
    super(problem);
  }
}

class Scanner {
  private at = 0;

  constructor(private readonly source: string) {}

  text(): void {
    this.whitespace();
    this.value();
    this.whitespace();
    if (this.at < this.source.length) this.fail('expected the end of the text');
  }

  private fail(expected: string): never {
    const found = this.at < this.source.length ? `'${this.source[this.at]}'` : 'the end of the text';
    throw new SyntaxStop(this.at, `${expected}, found ${found}`);
  }

  private whitespace(): void {
    while (this.at < this.source.length && ' \t\n\r'.includes(this.source[this.at] ?? '')) this.at += 1;
  }

  private literal(word: string): void {
    for (const expected of word) {
      if (this.source[this.at] !== expected) this.fail(`expected "${word}"`);
      this.at += 1;
    }
  }

  private value(): void {
    const char = this.source[this.at];
    if (char === '{') this.object();
    else if (char === '[') this.array();
    else if (char === '"') this.string();
    else if (char === 't') this.literal('true');
    else if (char === 'f') this.literal('false');
    else if (char === 'n') this.literal('null');
    else if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) this.number();
    else this.fail('expected a value (object, array, string, number, true, false or null)');
  }

  private object(): void {
    this.at += 1;
    this.whitespace();
    if (this.source[this.at] === '}') {
      this.at += 1;
      return;
    }
    for (;;) {
      if (this.source[this.at] !== '"') this.fail('expected a double-quoted property name');
      this.string();
      this.whitespace();
      if (this.source[this.at] !== ':') this.fail("expected ':' after the property name");
      this.at += 1;
      this.whitespace();
      this.value();
      this.whitespace();
      const next = this.source[this.at];
      if (next === '}') {
        this.at += 1;
        return;
      }
      if (next !== ',') this.fail("expected ',' or '}' after the property value");
      this.at += 1;
      this.whitespace();
    }
  }

  private array(): void {
    this.at += 1;
    this.whitespace();
    if (this.source[this.at] === ']') {
      this.at += 1;
      return;
    }
    for (;;) {
      this.value();
      this.whitespace();
      const next = this.source[this.at];
      if (next === ']') {
        this.at += 1;
        return;
      }
      if (next !== ',') this.fail("expected ',' or ']' after the array element");
      this.at += 1;
      this.whitespace();
    }
  }

  private string(): void {
    this.at += 1;
    for (;;) {
      const char = this.source[this.at];
      if (char === undefined) this.fail('expected the closing \'"\' of the string');
      if (char === '"') {
        this.at += 1;
        return;
      }
      if (char < ' ') this.fail('expected no raw control character inside a string (escape it)');
      if (char === '\\') {
        this.at += 1;
        const escaped = this.source[this.at];
        if (escaped === 'u') {
          for (let digit = 1; digit <= 4; digit += 1) {
            if (!/^[0-9a-fA-F]$/.test(this.source[this.at + digit] ?? '')) {
              this.at += digit;
              this.fail('expected four hexadecimal digits after \\u');
            }
          }
          this.at += 5;
          continue;
        }
        if (escaped === undefined || !'"\\/bfnrt'.includes(escaped)) this.fail('expected a valid escape after \\');
      }
      this.at += 1;
    }
  }

  private digits(what: string): void {
    const start = this.at;
    while (/^[0-9]$/.test(this.source[this.at] ?? '')) this.at += 1;
    if (this.at === start) this.fail(`expected a digit ${what}`);
  }

  private number(): void {
    if (this.source[this.at] === '-') this.at += 1;
    if (this.source[this.at] === '0') this.at += 1;
    else this.digits('in the number');
    if (this.source[this.at] === '.') {
      this.at += 1;
      this.digits("after the decimal point '.'");
    }
    if (this.source[this.at] === 'e' || this.source[this.at] === 'E') {
      this.at += 1;
      if (this.source[this.at] === '+' || this.source[this.at] === '-') this.at += 1;
      this.digits('in the exponent');
    }
  }
}
