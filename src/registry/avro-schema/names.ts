/**
 * Avro names (specification, "Names"): a name is `[A-Za-z_][A-Za-z0-9_]*`; a full name is a
 * namespace and a name joined by dots. A name written with a dot is already full and ignores any
 * namespace attribute; a name without one is placed in the namespace given beside it, else in the
 * namespace of the closest enclosing named type. Primitive type names are never qualified.
 */

export const PRIMITIVE_TYPE_NAMES = [
  'null',
  'boolean',
  'int',
  'long',
  'float',
  'double',
  'bytes',
  'string',
] as const;

export type PrimitiveTypeName = (typeof PRIMITIVE_TYPE_NAMES)[number];

const primitiveTypeNames: ReadonlySet<string> = new Set(PRIMITIVE_TYPE_NAMES);

export function isPrimitiveTypeName(value: string): value is PrimitiveTypeName {
  return primitiveTypeNames.has(value);
}

const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function isValidName(value: string): boolean {
  return NAME_PATTERN.test(value);
}

/** A namespace is empty (the null namespace) or dot-joined valid names. */
export function isValidNamespace(value: string): boolean {
  return value === '' || value.split('.').every(isValidName);
}

/**
 * The full name `name` denotes inside `namespace`. A leading dot forces the null namespace, as
 * avsc allows (`.Foo`); every dot-separated part must be a valid name, else undefined.
 */
export function fullNameOf(name: string, namespace: string): string | undefined {
  let full: string;
  if (name.includes('.')) full = name.startsWith('.') ? name.slice(1) : name;
  else full = namespace === '' ? name : `${namespace}.${name}`;
  return full.split('.').every(isValidName) ? full : undefined;
}

/** The namespace part of a full name: everything before the last dot, or '' when there is none. */
export function namespaceOf(fullName: string): string {
  const lastDot = fullName.lastIndexOf('.');
  return lastDot < 0 ? '' : fullName.slice(0, lastDot);
}

/** The name without its namespace: what Avro ≥ 1.9 compares when resolving a writer's type. */
export function unqualifiedName(fullName: string): string {
  return fullName.slice(fullName.lastIndexOf('.') + 1);
}
