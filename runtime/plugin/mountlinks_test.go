package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/runtime/plugin"
)

// An ABI plugin's mounts confine links as command tools' do: a granted directory holding a link that resolves
// outside it is refused at load, and the guest cannot create links (or files) in its read-only mounts.
func TestMountLinksConfined(t *testing.T) {
	t.Parallel()
	h := newHost(t)
	secretDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "secret.txt"), []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	withLink := func(target string) string { // a mount dir holding one symlink to target
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "e")); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	up := strings.Repeat("../", 20) + strings.TrimPrefix(secretDir, "/")
	for _, tc := range []struct {
		name, target, want string
	}{
		{"absolute link out", secretDir, "points outside the mount (to " + secretDir + ")"},
		{"relative link up and out", up, "points outside the mount"},
		{"link to /etc", "/etc", "points outside the mount (to /etc)"},
		{"dangling link", "nowhere", "does not resolve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := withLink(tc.target)
			_, err := h.Load(context.Background(), plugin.Spec{Name: "probe.wasm", Wasm: wasm(t, "go/probe/probe.wasm"), PoolSize: 1,
				Grants: plugin.Grants{Mounts: []plugin.Mount{{HostDir: dir, GuestDir: "/data"}}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("load with a mount holding a link to %s: %v; want an error naming the mount and containing %q", tc.target, err, tc.want)
			}
		})
	}

	// A link that stays inside is fine and is followed.
	dir := withLink("ok.txt")
	_, tool := probe(t, h, plugin.Grants{Mounts: []plugin.Mount{{HostDir: dir, GuestDir: "/data"}}})
	if res, err := call(t, tool, "readfile", `{"path":"/data/e"}`); err != nil || res.IsError || res.Text != "ok" {
		t.Fatalf("read through an inside link: %+v, %v", res, err)
	}
	// The guest cannot make a link of its own: relative, absolute, hard, or write a file.
	for _, c := range []struct{ tool, args string }{
		{"symlink", `{"target":"` + up + `","path":"/data/x"}`},
		{"symlink", `{"target":"` + secretDir + `","path":"/data/y"}`},
		{"symlink", `{"target":"../../..","path":"/data/z"}`},
		{"link", `{"target":"/data/ok.txt","path":"/data/h"}`},
		{"writefile", `{"path":"/data/new.txt"}`},
	} {
		res, err := call(t, tool, c.tool, c.args)
		if err != nil || !res.IsError {
			t.Errorf("%s %s in a read-only mount: %+v, %v; want an error result", c.tool, c.args, res, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 {
		t.Errorf("the mount changed: %v, %v", entries, err)
	}
	for _, p := range []string{"/data/x/secret.txt", "/data/y/secret.txt", "/data/../" + secretDir + "/secret.txt"} {
		if res, err := call(t, tool, "readfile", `{"path":"`+p+`"}`); err != nil || !res.IsError || strings.Contains(res.Text, "host secret") {
			t.Errorf("read of %s: %+v, %v; want an error result", p, res, err)
		}
	}
}
