#!/usr/bin/env bash
# The GitHub Action's run step (ci/action.yml), runnable anywhere: tests drive it with
# GITHUB_OUTPUT and GITHUB_STEP_SUMMARY pointed at temporary files.
#
# Inputs (environment): AGENT_PROMPT (required in run mode), AGENT_ARGS (extra flags, split like a
# shell command line by xargs: quotes work, nothing is expanded or executed),
# AGENT_WORKSPACE (default .), AGENT_BIN (default `agent` on PATH), AGENT_TRANSCRIPT
# (default $RUNNER_TEMP/agent-transcript-<pid>.json), AGENT_API_KEY (the `api-key`
# input; when empty, the ANTHROPIC_API_KEY inherited from the job is left alone).
# Outputs ($GITHUB_OUTPUT): status, exit-code, result, transcript. The Markdown summary is
# appended to $GITHUB_STEP_SUMMARY by `agent summary` (no tool output beyond short tails;
# the transcript is already redacted of secrets). Exits with the agent's exit code.
#
# Mode (AGENT_MODE: run, github, or auto, the default: github when GITHUB_EVENT_NAME is a
# comment, review or issue event or AGENT_EVENT_ACTION is labeled/assigned): github runs
# `agent github` with AGENT_TRIGGER_PHRASE, AGENT_LABEL_TRIGGER, AGENT_ASSIGNEE_TRIGGER,
# AGENT_ALLOWED_BOTS, AGENT_PUSH (false: --no-push) and the token AGENT_GITHUB_TOKEN,
# which only that command gets (as GITHUB_TOKEN); it adds the outputs comment-url, branch
# and pr-url. An event that does not call the agent (or a sender refused) exits 0 with
# status=skipped.
set -uo pipefail

agent=${AGENT_BIN:-agent}
agent=${agent/#\~/$HOME}
prompt=${AGENT_PROMPT:-}
workspace=${AGENT_WORKSPACE:-.}
transcript=${AGENT_TRANSCRIPT:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/agent-transcript-$$.json}
outputs=${GITHUB_OUTPUT:-/dev/null}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}

mode=${AGENT_MODE:-auto}
if [ "$mode" = auto ]; then
  mode=run
  case "${GITHUB_EVENT_NAME:-}" in
    issue_comment | pull_request_review_comment | pull_request_review | issues) mode=github ;;
  esac
  case "${AGENT_EVENT_ACTION:-}" in
    labeled | assigned) mode=github ;;
  esac
fi
case "$mode" in
  run | github) ;;
  *)
    echo "::error::the 'mode' input is '$mode', not auto, run or github" >&2
    exit 2
    ;;
esac
github_token=${AGENT_GITHUB_TOKEN:-}
unset AGENT_GITHUB_TOKEN

if [ "$mode" = run ] && [ -z "$prompt" ]; then
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

# The `command-env` input first: a `--command-env` in `args` comes later and wins.
extra=(--command-env "${AGENT_COMMAND_ENV:-allow}" "${extra[@]}")

if [ -n "${AGENT_ALLOW_DOMAIN:-}" ]; then
  # The `allow-domain` input: commas or newlines between hosts.
  extra+=(--allow-domain "$(printf '%s' "$AGENT_ALLOW_DOMAIN" | tr '\n' ',')")
fi

# The `deny-opaque` input, on unless `false`: fail closed on commands no rule can see.
if [ "${AGENT_DENY_OPAQUE:-true}" != false ]; then
  extra+=(--deny-opaque)
fi

rm -f "$transcript"
if [ "$mode" = github ]; then
  gh=(--trigger-phrase "${AGENT_TRIGGER_PHRASE:-@agent}")
  [ -n "${AGENT_LABEL_TRIGGER:-}" ] && gh+=(--label-trigger "$AGENT_LABEL_TRIGGER")
  [ -n "${AGENT_ASSIGNEE_TRIGGER:-}" ] && gh+=(--assignee-trigger "$AGENT_ASSIGNEE_TRIGGER")
  [ -n "${AGENT_ALLOWED_BOTS:-}" ] && gh+=(--allowed-bots "$AGENT_ALLOWED_BOTS")
  [ "${AGENT_PUSH:-true}" = false ] && gh+=(--no-push)
  [ -n "$prompt" ] && gh+=(--prompt "$prompt")
  GITHUB_TOKEN="$github_token" "$agent" github -C "$workspace" -o "$transcript" "${gh[@]}" "${extra[@]}"
  code=$?
else
  "$agent" run -C "$workspace" -o "$transcript" "${extra[@]}" -- "$prompt"
  code=$?
fi

echo "exit-code=$code" >> "$outputs"
if [ -s "$transcript" ]; then
  "$agent" summary --github-output "$transcript" >> "$outputs"
  "$agent" summary "$transcript" >> "$summary"
elif [ "$mode" = github ] && [ "$code" = 0 ]; then
  # Not called (no phrase, another label) or a sender refused: the log says which.
  {
    echo "status=skipped"
    echo "result="
    echo "transcript="
  } >> "$outputs"
  echo "### agent: not called by this event (see the step's log)" >> "$summary"
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
