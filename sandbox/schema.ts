// A validator for the JSON-schema subset that tool declarations use (type object with
// properties/required; string, number, integer, boolean, array with items, nested object,
// enum, minimum/maximum). Errors name the field by its path, e.g. `filters.year: expected
// integer, got 2.5`. Tested by sandbox/schema.test.ts.
import type { JsonObjectSchema, JsonSchema, ToolSpec } from "./types.ts";

function typeName(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "array";
  if (typeof x === "number" && !Number.isFinite(x)) return String(x);
  return typeof x;
}

function show(x: unknown): string {
  const s = JSON.stringify(x);
  return s === undefined ? String(x) : s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/** Returns the first problem with `value` against `schema`, or undefined when it conforms. */
export function validateValue(schema: JsonSchema, value: unknown, path: string): string | undefined {
  const at = path || "arguments";
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return `${at}: expected string, got ${typeName(value)}`;
      if (schema.enum && !schema.enum.includes(value))
        return `${at}: expected one of ${schema.enum.map(show).join(", ")}, got ${show(value)}`;
      return undefined;
    case "number":
    case "integer": {
      if (typeof value !== "number" || !Number.isFinite(value))
        return `${at}: expected ${schema.type}, got ${typeName(value)}`;
      if (schema.type === "integer" && !Number.isInteger(value))
        return `${at}: expected integer, got ${value}`;
      if (schema.enum && !schema.enum.includes(value))
        return `${at}: expected one of ${schema.enum.join(", ")}, got ${value}`;
      if (schema.minimum !== undefined && value < schema.minimum)
        return `${at}: must be >= ${schema.minimum}, got ${value}`;
      if (schema.maximum !== undefined && value > schema.maximum)
        return `${at}: must be <= ${schema.maximum}, got ${value}`;
      return undefined;
    }
    case "boolean":
      return typeof value === "boolean" ? undefined : `${at}: expected boolean, got ${typeName(value)}`;
    case "array": {
      if (!Array.isArray(value)) return `${at}: expected array, got ${typeName(value)}`;
      if (!schema.items) return undefined;
      for (let i = 0; i < value.length; i++) {
        const problem = validateValue(schema.items, value[i], `${path}[${i}]`);
        if (problem) return problem;
      }
      return undefined;
    }
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value))
        return `${at}: expected object, got ${typeName(value)}`;
      const record = value as Record<string, unknown>;
      const props = schema.properties ?? {};
      for (const key of schema.required ?? []) {
        if (!Object.hasOwn(record, key) || record[key] === undefined)
          return `${path ? `${path}.` : ""}${key}: required field is missing`;
      }
      for (const [key, sub] of Object.entries(props)) {
        if (!Object.hasOwn(record, key) || record[key] === undefined) continue;
        const problem = validateValue(sub, record[key], path ? `${path}.${key}` : key);
        if (problem) return problem;
      }
      return undefined;
    }
    default:
      return `${at}: unsupported schema type ${show((schema as { type: unknown }).type)}`;
  }
}

/** The tool-argument check: the arguments object against the tool's `parameters`. */
export function validateArgs(parameters: JsonObjectSchema, args: unknown): string | undefined {
  return validateValue(parameters, args, "");
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const SCHEMA_TYPES = new Set(["string", "number", "integer", "boolean", "array", "object"]);

function checkSchema(schema: unknown, path: string): string | undefined {
  if (typeof schema !== "object" || schema === null) return `${path}: schema must be an object`;
  const s = schema as Record<string, unknown>;
  if (typeof s.type !== "string" || !SCHEMA_TYPES.has(s.type))
    return `${path}.type: expected one of ${[...SCHEMA_TYPES].join(", ")}, got ${show(s.type)}`;
  if (s.enum !== undefined && !Array.isArray(s.enum)) return `${path}.enum: expected array`;
  if (s.type === "array" && s.items !== undefined) return checkSchema(s.items, `${path}.items`);
  if (s.type === "object") {
    if (s.properties !== undefined) {
      if (typeof s.properties !== "object" || s.properties === null)
        return `${path}.properties: expected object`;
      for (const [k, sub] of Object.entries(s.properties)) {
        const problem = checkSchema(sub, `${path}.properties.${k}`);
        if (problem) return problem;
      }
    }
    if (
      s.required !== undefined &&
      !(Array.isArray(s.required) && s.required.every((r) => typeof r === "string"))
    )
      return `${path}.required: expected an array of strings`;
  }
  return undefined;
}

/** Checks a tool declaration itself (done before any call, so a bad declaration is a SandboxError). */
export function validateToolSpec(spec: ToolSpec): string | undefined {
  if (typeof spec?.name !== "string" || !IDENTIFIER.test(spec.name))
    return `tool name ${show(spec?.name)} is not a JavaScript identifier`;
  if (typeof spec.body !== "string") return `tool ${spec.name}: body must be a string of JavaScript`;
  if (spec.parameters?.type !== "object") return `tool ${spec.name}: parameters.type must be "object"`;
  return checkSchema(spec.parameters, `tool ${spec.name}: parameters`);
}
