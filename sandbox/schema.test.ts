// Unit tests of the tool-argument validator (sandbox/schema.ts): each schema type, nesting,
// enums, required fields, and that every error names the field. Run: npx vitest run sandbox/schema
import { describe, expect, it } from "vitest";
import { validateArgs, validateToolSpec } from "./schema.ts";
import type { JsonObjectSchema, ToolSpec } from "./types.ts";

const schema: JsonObjectSchema = {
  type: "object",
  properties: {
    user_id: { type: "string" },
    limit: { type: "integer", minimum: 1, maximum: 50 },
    score: { type: "number" },
    strict: { type: "boolean" },
    genre: { type: "string", enum: ["fiction", "history"] },
    tags: { type: "array", items: { type: "string" } },
    filter: { type: "object", properties: { year: { type: "integer" } }, required: ["year"] },
  },
  required: ["user_id"],
};

describe("validateArgs", () => {
  it("accepts conforming arguments, with optional fields absent", () => {
    expect(validateArgs(schema, { user_id: "u1" })).toBeUndefined();
    expect(
      validateArgs(schema, {
        user_id: "u1",
        limit: 5,
        score: 0.5,
        strict: false,
        genre: "history",
        tags: ["a", "b"],
        filter: { year: 1999 },
        extra: "ignored",
      }),
    ).toBeUndefined();
  });

  it.each([
    [{}, "user_id: required field is missing"],
    [{ user_id: 7 }, "user_id: expected string, got number"],
    [{ user_id: "u", limit: 2.5 }, "limit: expected integer, got 2.5"],
    [{ user_id: "u", limit: 0 }, "limit: must be >= 1, got 0"],
    [{ user_id: "u", limit: 51 }, "limit: must be <= 50, got 51"],
    [{ user_id: "u", score: "high" }, "score: expected number, got string"],
    [{ user_id: "u", strict: "yes" }, "strict: expected boolean, got string"],
    [{ user_id: "u", genre: "poetry" }, 'genre: expected one of "fiction", "history", got "poetry"'],
    [{ user_id: "u", tags: "a" }, "tags: expected array, got string"],
    [{ user_id: "u", tags: ["a", 3] }, "tags[1]: expected string, got number"],
    [{ user_id: "u", filter: [] }, "filter: expected object, got array"],
    [{ user_id: "u", filter: {} }, "filter.year: required field is missing"],
    [{ user_id: "u", filter: { year: "1999" } }, "filter.year: expected integer, got string"],
    [null, "arguments: expected object, got null"],
    [[1], "arguments: expected object, got array"],
    [undefined, "arguments: expected object, got undefined"],
  ])("rejects %j with %s", (args, message) => {
    expect(validateArgs(schema, args)).toBe(message);
  });

  it("rejects non-finite numbers", () => {
    expect(validateArgs(schema, { user_id: "u", score: Number.NaN })).toBe("score: expected number, got NaN");
  });
});

describe("validateToolSpec", () => {
  const good: ToolSpec = { name: "lookup", description: "", parameters: schema, body: "(a) => a" };
  it("accepts a well-formed declaration", () => {
    expect(validateToolSpec(good)).toBeUndefined();
  });
  it("names what is wrong", () => {
    expect(validateToolSpec({ ...good, name: "bad name" })).toMatch(/not a JavaScript identifier/);
    expect(validateToolSpec({ ...good, body: 5 as unknown as string })).toMatch(/body must be a string/);
    expect(
      validateToolSpec({ ...good, parameters: { type: "array" } as unknown as JsonObjectSchema }),
    ).toMatch(/parameters.type must be "object"/);
    expect(
      validateToolSpec({
        ...good,
        parameters: { type: "object", properties: { x: { type: "date" } } } as unknown as JsonObjectSchema,
      }),
    ).toMatch(/parameters.properties.x.type/);
  });
});
