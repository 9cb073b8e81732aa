package bus

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkStoreTrajectory measures the embedded store's cost per finished trajectory of 4k tokens (~117 KB, as
// runtime/stream's BenchmarkSpoolPut): storing the result (one per trajectory id, counted for its request) and
// reading it back through the trainer's outbox with an ack, as a consumer keeping up would; from 1 producer and
// from 64, with the default sync interval and with sync_interval = "always".
func BenchmarkStoreTrajectory(b *testing.B) {
	traj := make([]byte, 117_000)
	for i := range traj {
		traj[i] = '1'
	}
	for _, sync_ := range []string{SyncAlways, "2m"} {
		for _, producers := range []int{1, 64} {
			b.Run(fmt.Sprintf("sync=%s/producers=%d", sync_, producers), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Dir = b.TempDir()
				cfg.SyncInterval = sync_
				bus, err := Open(context.Background(), cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer bus.Close()
				ctx := context.Background()
				o, err := bus.Outbox(ctx, "c")
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(traj)))
				read := make(chan error, 1)
				go func() {
					for range b.N {
						d, err := o.Next(ctx)
						if err == nil {
							err = d.m.Ack() // as the stream would: acks go out without waiting for each reply
						}
						if err != nil {
							read <- err
							return
						}
					}
					read <- nil
				}()
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range producers {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							s := Sample{Consumer: "c", Request: "r", ItemID: "i", Index: int(i), TrajectoryID: fmt.Sprint("r/i/", i), Samples: b.N + 1}
							if _, err := bus.publishResult(ctx, Result{Sample: s, Status: StatusFinished, Trajectory: traj}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if err := <-read; err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "traj/s")
			})
		}
	}
}
