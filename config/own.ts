// Lookups by names a user gives (a task, a recipe, a base, a plan): own properties only, so a
// name such as "constructor", "toString" or "__proto__" finds nothing instead of something of
// Object.prototype, and the caller's "unknown ..." error names it.

/** record[key] where key is one of record's own properties, else undefined. */
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
