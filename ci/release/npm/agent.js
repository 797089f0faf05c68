#!/usr/bin/env node
// The launcher of the npm package: runs the `agent` binary of the platform package npm
// installed beside it (an optionalDependency selected by `os` and `cpu`, as esbuild,
// biome and @openai/codex do), passing arguments, stdio, signals and the exit status.
"use strict";
const { spawn } = require("child_process");
const path = require("path");

const NAME = require("../package.json").name;
const PLATFORMS = {
  "linux-x64": "linux-x64",
  "linux-arm64": "linux-arm64",
  "darwin-x64": "darwin-x64",
  "darwin-arm64": "darwin-arm64",
};

function binary() {
  const key = `${process.platform}-${process.arch}`;
  const suffix = PLATFORMS[key];
  if (!suffix) {
    console.error(`${NAME}: no agent binary for ${key} (releases: ${Object.keys(PLATFORMS).join(", ")})`);
    process.exit(2);
  }
  const pkg = `${NAME}-${suffix}`;
  try {
    return require.resolve(`${pkg}/bin/agent`);
  } catch (e) {
    console.error(
      `${NAME}: the platform package ${pkg} is not installed (npm skipped the optional dependency?); ` +
        `reinstall without --omit=optional, or use install.sh`
    );
    process.exit(2);
  }
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("error", (e) => {
  console.error(`${NAME}: cannot run the agent binary: ${e.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
