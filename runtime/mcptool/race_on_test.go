//go:build race

package mcptool

// raceEnabled: the race detector's shadow memory adds several times the memory a process touches to its RSS.
const raceEnabled = true
