#!/bin/sh
# The CLI contract on the CUDA build, run on the GPU. Usage: tests/cli_contract_cuda.sh BINARY
exec sh "$(dirname "$0")/cli_contract.sh" "$1" --device cuda
