#!/bin/bash
# Reward 1 when count.txt holds the line count of data.txt (7), else 0.
if [ "$(tr -d ' \n' < /app/count.txt 2>/dev/null)" = "$(wc -l < /app/data.txt | tr -d ' ')" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
