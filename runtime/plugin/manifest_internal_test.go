package plugin

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// TestManifestMessageRoles checks how a hook's manifest field message_roles is read: absent is every message; a
// list of roles is those; an empty list or an unknown role fails the load, naming the plugin and the problem.
func TestManifestMessageRoles(t *testing.T) {
	const head = `{"abi_version":1,"kind":"hook","name":"h","events":["message_added"]`
	for _, tt := range []struct {
		roles string // the field's JSON, "" for none
		want  map[string]bool
		err   string
	}{
		{"", nil, ""},
		{`["tool"]`, map[string]bool{"tool": true}, ""},
		{`["user","tool","user"]`, map[string]bool{"user": true, "tool": true}, ""},
		{`["system","user","assistant","tool"]`, map[string]bool{"system": true, "user": true, "assistant": true, "tool": true}, ""},
		{`[]`, nil, "message_roles lists no role"},
		{`["bot"]`, nil, `message_roles: "bot" is not one of system, user, assistant, tool`},
		{`["Tool"]`, nil, `message_roles: "Tool" is not one of`},
	} {
		mf := head + "}"
		if tt.roles != "" {
			mf = head + `,"message_roles":` + tt.roles + "}"
		}
		m := &Module{label: "hook.wasm"}
		err := m.setManifest([]byte(mf))
		if tt.err != "" {
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "hook.wasm") {
				t.Errorf("%s: error %v; want a LoadError naming hook.wasm and containing %q", mf, err, tt.err)
			}
			continue
		}
		if err != nil || !maps.Equal(m.roles, tt.want) || (tt.want == nil) != (m.roles == nil) {
			t.Errorf("%s: roles %v, error %v; want %v", mf, m.roles, err, tt.want)
		}
	}
}
