// task.options' schemas and checker live in config/task-options.ts (so a config is checked
// where it is parsed); the tasks import them from here.
export * from "../config/task-options.ts";
