package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/agentrt/agentrt/runtime/bus"
)

// One process, the embedded store: a trainer's request of one prompt with two samples is accepted, a node runs
// the samples, and the trainer reads the trajectories and the request's done marker from its outbox.
func Example() {
	dir, _ := os.MkdirTemp("", "bus-example")
	defer os.RemoveAll(dir)
	cfg := bus.DefaultConfig() // mode = "embedded"
	cfg.Dir = dir
	ctx := context.Background()
	b, err := bus.Open(ctx, cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	req := bus.Request{Consumer: "trainer-1", ID: "step-0", Samples: 2}
	var samples []bus.Sample
	for i := range 2 {
		samples = append(samples, bus.Sample{Consumer: "trainer-1", Request: "step-0", ItemID: "q1", Index: i, GroupID: "step-0/q1",
			TrajectoryID: fmt.Sprintf("step-0/q1/%d", i), Samples: 2, Body: json.RawMessage(`{"prompt":"2+2?"}`)})
	}
	out, _ := b.Submit(ctx, req, samples)
	again, _ := b.Submit(ctx, req, samples)
	fmt.Printf("stored %d work items; a repeated submit stored %d (duplicate: %v)\n", out.Stored, again.Stored, again.Duplicate)

	nodeCtx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Serve(nodeCtx, bus.Node{Slots: 4, Run: func(ctx context.Context, s bus.Sample, delivery int) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"id": s.TrajectoryID, "response": "4"})
	}})

	o, _ := b.Outbox(ctx, "trainer-1")
	var got []string
	for {
		d, err := o.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		d.Ack(ctx)
		if d.Done {
			break
		}
		got = append(got, fmt.Sprintf("%s %s %s", d.TrajectoryID, d.Status, d.Trajectory))
	}
	sort.Strings(got)
	for _, g := range got {
		fmt.Println(g)
	}
	fmt.Println("request step-0 done")
	// Output:
	// stored 2 work items; a repeated submit stored 0 (duplicate: true)
	// step-0/q1/0 finished {"id":"step-0/q1/0","response":"4"}
	// step-0/q1/1 finished {"id":"step-0/q1/1","response":"4"}
	// request step-0 done
}
