// Command loadgen is the minimal load generator of the side-by-side benchmark (bench/run.sh): it replays the
// /generate request bodies of an `agentrt emulate --log` file against an emulator as fast as C keep-alive
// connections allow, with no tokenization, parsing or agent logic, so its requests per second are the emulator's
// own capacity on this machine: the physical limit an agent runtime's episodes per second can be compared with.
//
// Usage:
//
//	loadgen --url URL --requests EMU_LOG --concurrency C [--repeat K]
//
// It prints one JSON object: requests, wall_s, requests_per_s, cpu_s (of loadgen itself), errors.
package main
