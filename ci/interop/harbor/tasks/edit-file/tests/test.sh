#!/bin/bash
# Reward 1 when greeting.txt was edited to the right text, else 0.
if [ "$(cat /app/greeting.txt)" = "Hello, world!" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
