#!/usr/bin/env bash
# The GitHub Action's run step (ci/action.yml), runnable anywhere: tests drive it with
# GITHUB_OUTPUT and GITHUB_STEP_SUMMARY pointed at temporary files.
#
# Inputs (environment): AGENT_PROMPT (required), AGENT_ARGS (extra flags, split like a
# shell command line by xargs: quotes work, nothing is expanded or executed),
# AGENT_WORKSPACE (default .), AGENT_BIN (default `agent` on PATH), AGENT_TRANSCRIPT
# (default $RUNNER_TEMP/agent-transcript-<pid>.json), AGENT_API_KEY (the `api-key`
# input; when empty, the ANTHROPIC_API_KEY inherited from the job is left alone).
# Outputs ($GITHUB_OUTPUT): status, exit-code, result, transcript. The Markdown summary is
# appended to $GITHUB_STEP_SUMMARY by `agent summary` (no tool output beyond short tails;
# the transcript is already redacted of secrets). Exits with the agent's exit code.
set -uo pipefail

agent=${AGENT_BIN:-agent}
agent=${agent/#\~/$HOME}
prompt=${AGENT_PROMPT:-}
workspace=${AGENT_WORKSPACE:-.}
transcript=${AGENT_TRANSCRIPT:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/agent-transcript-$$.json}
outputs=${GITHUB_OUTPUT:-/dev/null}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}

if [ -z "$prompt" ]; then
  echo "::error::the 'prompt' input is empty" >&2
  exit 2
fi

if [ -n "${AGENT_API_KEY:-}" ]; then
  export ANTHROPIC_API_KEY="$AGENT_API_KEY"
fi
unset AGENT_API_KEY

extra=()
if [ -n "${AGENT_ARGS:-}" ]; then
  # xargs splits on blanks and honours quotes; printf emits each word NUL-terminated.
  words=$(mktemp)
  if ! printf '%s' "$AGENT_ARGS" | xargs -r printf '%s\0' > "$words"; then
    rm -f "$words"
    echo "::error::cannot split the 'args' input (unbalanced quotes?)" >&2
    exit 2
  fi
  mapfile -d '' extra < "$words"
  rm -f "$words"
fi

if [ -n "${AGENT_ALLOW_DOMAIN:-}" ]; then
  # The `allow-domain` input: commas or newlines between hosts.
  extra+=(--allow-domain "$(printf '%s' "$AGENT_ALLOW_DOMAIN" | tr '\n' ',')")
fi

rm -f "$transcript"
"$agent" run -C "$workspace" -o "$transcript" "${extra[@]}" -- "$prompt"
code=$?

echo "exit-code=$code" >> "$outputs"
if [ -s "$transcript" ]; then
  "$agent" summary --github-output "$transcript" >> "$outputs"
  "$agent" summary "$transcript" >> "$summary"
else
  # A usage error (exit 2) stops the agent before it writes a transcript.
  {
    echo "status=error"
    echo "result="
    echo "transcript="
  } >> "$outputs"
  {
    echo "### agent: ❌ did not start (exit $code)"
    echo
    echo "See the step's log for the reason (a bad flag or a missing API key)."
  } >> "$summary"
fi
exit "$code"
