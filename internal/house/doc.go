// Package house has no code: its test checks the import boundaries of the whole module.
package house
