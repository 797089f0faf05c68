#!/usr/bin/env bash
# agent's skill validation checked against the specification's reference validator,
# `skills-ref` (PyPI; agentskills/agentskills' skills-ref/, `agentskills validate DIR`):
# for every skill of the public corpora in tests/fixtures/skills and for a set of broken
# skills made here, the reference's verdict (valid, or its list of errors) must agree
# with `agent skills --json`'s (loaded with no warning, or warned about / skipped). agent
# is lenient where the reference is strict, so "agrees" means: valid for one exactly when
# clean for the other. Needs PyPI, so it is not part of .ci/run:
#
#     ci/interop/skills.sh      # prints one line per skill; exit 1 on a disagreement
#
# AGENT=path skips `cargo build --release`; SKILLS_REF_VERSION pins the package.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log() { printf 'skills interop: %s\n' "$*" >&2; }

python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install -q "skills-ref${SKILLS_REF_VERSION:+==$SKILLS_REF_VERSION}"
log "$("$scratch/venv/bin/pip" list 2>/dev/null | grep -Ei '^skills-ref ' | tr -s ' ')"
ref=$scratch/venv/bin/agentskills

agent=${AGENT:-}
if [ -z "$agent" ]; then
  (cd "$root" && cargo build --release -q)
  agent=$root/target/release/agent
fi

# Broken skills, one rule each.
bad=$scratch/bad
mk() { mkdir -p "$bad/$1"; printf '%b' "$2" > "$bad/$1/SKILL.md"; }
mk bad-name '---\nname: Bad_Name\ndescription: d\n---\nx\n'
mk other-folder '---\nname: not-the-folder\ndescription: d\n---\nx\n'
mk long-description "---\nname: long-description\ndescription: $(printf 'x%.0s' $(seq 1025))\n---\nx\n"
mk no-description '---\nname: no-description\n---\nx\n'
mk not-yaml '---\nname: [x\n: : :\n---\nx\n'
mk double--hyphen '---\nname: double--hyphen\ndescription: d\n---\nx\n'
mk unknown-field '---\nname: unknown-field\ndescription: d\nauthor: me\n---\nx\n'
mk fine '---\nname: fine\ndescription: A valid one.\n---\nx\n'

failed=0
check() { # DIR (one skill)
  local dir=$1 verdict_ref verdict_agent
  if "$ref" validate "$dir" >/dev/null 2>&1; then verdict_ref=valid; else verdict_ref=invalid; fi
  verdict_agent=$("$agent" skills --json --no-skills --skill "$dir" | python3 -c '
import json, sys
skills = json.load(sys.stdin)["skills"]
clean = len(skills) == 1 and skills[0]["loaded"] and not skills[0].get("warnings")
print("valid" if clean else "invalid")')
  if [ "$verdict_ref" = "$verdict_agent" ]; then
    printf 'ok    %-8s %s\n' "$verdict_ref" "${dir#"$root"/}"
  else
    printf 'FAIL  skills-ref %s, agent %s: %s\n' "$verdict_ref" "$verdict_agent" "$dir"
    "$ref" validate "$dir" 2>&1 | sed 's/^/      /' || true
    failed=1
  fi
}
while IFS= read -r file; do
  check "$(dirname "$file")"
done < <(find "$root/tests/fixtures/skills" "$bad" -name SKILL.md | sort)
exit "$failed"
