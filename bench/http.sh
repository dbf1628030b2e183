#!/usr/bin/env bash
# placeholder: the admin API load benchmark (wrk vs nginx) is being written
echo "http bench: not written yet"
