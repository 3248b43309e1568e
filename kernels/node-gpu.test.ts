// Unit tests: kernels/node-gpu.ts's scheduler for dawn.node's polls (the GPU-wait backoff).
import { describe, expect, it } from "vitest";
import { dawnPollScheduler, SPIN_POLLS } from "./node-gpu";

describe("dawnPollScheduler", () => {
  const calls: string[] = [];
  let clock = 0;
  const schedule = dawnPollScheduler(
    () => calls.push("immediate"),
    (_fn, ms) => calls.push(`timeout ${ms}`),
    () => clock,
  );
  // a native function with no name, as dawn.node's ProcessEvents callback
  const dawnPoll = Function.prototype as unknown as () => void;

  it("runs Dawn's first polls at once, then backs off to 1 ms timers while they keep coming", () => {
    calls.length = 0;
    for (let i = 0; i < SPIN_POLLS + 3; i++) {
      schedule(dawnPoll);
      clock += 0.1;
    }
    expect(calls).toEqual([...Array(SPIN_POLLS).fill("immediate"), ...Array(3).fill("timeout 1")]);
  });

  it("starts again at once after a pause, and never delays anyone else's callbacks", () => {
    calls.length = 0;
    clock += 10;
    schedule(dawnPoll);
    for (let i = 0; i < 2 * SPIN_POLLS; i++) schedule(() => {});
    const named = function poll() {};
    schedule(named);
    schedule(named.bind(null));
    expect(calls).toEqual(Array(2 * SPIN_POLLS + 3).fill("immediate"));
  });
});
