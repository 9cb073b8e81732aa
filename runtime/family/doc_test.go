package family

import (
	"os"
	"strings"
	"testing"
)

// TestDocsTable: docs/families.md has one row per profile, with its parser and reasoning, saying "passes" exactly
// for the families whose self-test passes (selfTestWant).
func TestDocsTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/families.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.ReplaceAll(line, `\|`, "¦") // escaped pipes inside cells
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) == 6 {
			rows[cells[0]] = cells
		}
	}
	for _, p := range Profiles {
		row, ok := rows[p.Name]
		if !ok {
			t.Errorf("docs/families.md has no row for %s", p.Name)
			continue
		}
		parser := p.Parser
		if parser == "" {
			parser = "-"
		}
		if row[2] != parser || row[3] != string(p.Reasoning) {
			t.Errorf("docs/families.md row %s says parser %s, reasoning %s; the profile says %s, %s", p.Name, row[2], row[3], parser, p.Reasoning)
		}
		if passes := row[5] == "passes"; passes != (selfTestWant[p.Name] == "") {
			t.Errorf("docs/families.md row %s says %q; the self-test expectation is %q", p.Name, row[5], selfTestWant[p.Name])
		}
	}
}
