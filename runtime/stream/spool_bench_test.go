package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkSpoolPut measures committing 4k-token trajectories (~117 KB each) into the spool, with and without
// fsync, from 1 producer (every put waits for its own commit) and from 64 (group commit). Records are acked
// by a second goroutine as they land, as a consumer keeping up would.
func BenchmarkSpoolPut(b *testing.B) {
	tail := make([]byte, 117_000)
	for i := range tail {
		tail[i] = '1'
	}
	for _, fsync := range []bool{true, false} {
		for _, producers := range []int{1, 64} {
			b.Run(fmt.Sprintf("fsync=%v/producers=%d", fsync, producers), func(b *testing.B) {
				s, err := openSpool(spoolConfig{dir: b.TempDir(), maxRecords: 4096, maxBytes: 4 << 30, noSync: !fsync, cacheBytes: 64 << 20})
				if err != nil {
					b.Fatal(err)
				}
				defer s.close()
				b.SetBytes(int64(len(tail)))
				var next atomic.Int64
				var wg sync.WaitGroup
				seqs := make(chan uint64, 4096)
				done := make(chan struct{})
				go func() {
					defer close(done)
					batch := make([]uint64, 0, 64)
					for sq := range seqs {
						batch = append(batch, sq)
						if len(batch) == cap(batch) {
							s.ack("c", batch, nil)
							batch = batch[:0]
						}
					}
					if len(batch) > 0 {
						s.ack("c", batch, nil)
					}
				}()
				b.ResetTimer()
				for p := 0; p < producers; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							sq, _, err := s.put(context.Background(), "c", kindTrajectory, fmt.Sprint(i), tail)
							if err != nil {
								b.Error(err)
								return
							}
							seqs <- sq
						}
					}()
				}
				wg.Wait()
				close(seqs)
				<-done
				b.StopTimer()
				_, _, commits := s.stats()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "traj/s")
				b.ReportMetric(float64(b.N)/float64(commits), "traj/commit")
			})
		}
	}
}
