//go:build !race

package mcptool

const raceEnabled = false
