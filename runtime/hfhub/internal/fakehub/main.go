// Command fakehub serves model folders as a Hugging Face hub on loopback (runtime/hfhub/hfhubtest), for the shell
// tests (scripts/test.d): `fakehub ORG/NAME=DIR ...` prints the endpoint URL (what HF_ENDPOINT is set to) on one
// line, then serves until SIGTERM or SIGINT.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentrt/agentrt/runtime/hfhub/hfhubtest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakehub ORG/NAME=DIR ...")
		os.Exit(2)
	}
	hub := hfhubtest.New()
	defer hub.Close()
	for _, a := range os.Args[1:] {
		id, dir, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "fakehub: %q is not ORG/NAME=DIR\n", a)
			os.Exit(2)
		}
		commit, err := hub.PushDir(id, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakehub:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "fakehub: %s at commit %s\n", id, commit)
	}
	fmt.Println(hub.URL)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}
