package sglang_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/sglang/emulator"
)

// BenchmarkRouting compares the routing settings (Config.Affinity x Config.Placement) on a skewed agentic workload
// over 4 emulators with the KV-capacity model (emulator.Config.KVTokens; every prefill holds up the worker's decodes):
// 48 groups of 4 samples sharing a ~1,500-token first prompt, each turn 48 generated tokens then 64 tokens of tool
// result, 3 turns per episode, but every 8th group 30 (10x longer); 64 episodes in flight, started group by group as
// slots free up, as the runtime's scheduler does ("leader-first": a group's other samples wait for sample 0's
// first response, so that they find the shared prompt cached: under SGLang's default FCFS scheduling, and the
// emulator's, samples that arrive together each prefill it). It reports the tokens prefilled per group (prompt_tokens -
// cached_tokens over all its requests; the shared prompt alone is ~1,500), episodes/s, the p50 and p99 latency of a
// turn, and the workers' retractions. Run once: go test -run '^$' -bench BenchmarkRouting -benchtime=1x ./sglang/
//
// The settings run in turn, routingRounds times (a busy machine's load drifts; the rounds interleave so that each
// setting sees the same drift): compare the medians.
func BenchmarkRouting(b *testing.B) {
	const (
		workers, groups, samples, inFlight = 4, 48, 4, 64
		promptLen, outLen, toolLen         = 1500, 48, 64
		shortTurns, longTurns, longEvery   = 3, 30, 8
	)
	qwenTokenizer(b) // the emulators need it; skips without the model
	type setting struct {
		affinity, placement string
		leader              bool // a group's other samples start when sample 0's first turn has returned
	}
	var settings []setting
	for range routingRounds {
		settings = append(settings, []setting{
			{sglang.AffinityEpisode, sglang.PlacementRendezvous, false}, // before: episode id, rendezvous hashing
			{sglang.AffinityGroup, sglang.PlacementRendezvous, false},
			{sglang.AffinityEpisode, sglang.PlacementLeastLoaded, false},
			{sglang.AffinityGroup, sglang.PlacementLeastLoaded, false}, // the default
			{sglang.AffinityGroup, sglang.PlacementLeastLoaded, true},
		}...)
	}
	for _, v := range settings {
		name := v.affinity + "/" + v.placement
		if v.leader {
			name += "/leader-first"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				var srvs []*emulator.Server
				var urls []string
				for range workers {
					s, u := startEmulator(b, func(c *emulator.Config) {
						// 16 episodes per worker hold ~40k tokens when balanced: an unlucky worker queues
						c.KVTokens = 48000
						// slow enough that the emulated GPU, not the box's CPU, is what requests wait for
						c.Latency = emulator.Latency{Fixed: 5 * time.Millisecond, PerPromptToken: 50 * time.Microsecond, PerOutputToken: 2 * time.Millisecond}
					})
					srvs, urls = append(srvs, s), append(urls, u)
				}
				cfg := sglang.DefaultConfig()
				cfg.Workers = urls
				cfg.Affinity, cfg.Placement = v.affinity, v.placement
				c, err := sglang.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				ids := func(n int) []int32 {
					out := make([]int32, n)
					for i := range out {
						out[i] = int32(1000 + rng.IntN(50000))
					}
					return out
				}
				type episode struct {
					group, id string
					prompt    []int32
					turns     int
					first     chan struct{} // closed when the group's sample 0 has its first response
					leader    bool
				}
				var eps []episode
				for g := range groups {
					turns := shortTurns
					if g%longEvery == longEvery-1 {
						turns = longTurns
					}
					prompt := ids(promptLen)
					first := make(chan struct{})
					for k := range samples {
						eps = append(eps, episode{fmt.Sprint("g", g), fmt.Sprintf("g%d#%d", g, k), prompt, turns, first, k == 0})
					}
				}
				tools := make([][]int32, longTurns) // the same tool output for every episode's turn t
				for t := range tools {
					tools[t] = ids(toolLen)
				}
				var (
					mu        sync.Mutex
					lat       []time.Duration
					prefilled = map[string]int{}
				)
				slots := make(chan struct{}, inFlight)
				var wg sync.WaitGroup
				start := time.Now()
				for _, ep := range eps {
					slots <- struct{}{}
					wg.Go(func() {
						defer func() { <-slots }()
						ctx := sglang.WithGroup(b.Context(), ep.group)
						in := slices.Clone(ep.prompt)
						if v.leader && !ep.leader {
							<-ep.first
						}
						for t := range ep.turns {
							t0 := time.Now()
							resp, err := c.Generate(ctx, ep.id, &sglang.GenerateRequest{InputIDs: in, RID: fmt.Sprintf("%s.%d", ep.id, t),
								SamplingParams: sglang.SamplingParams{MaxNewTokens: outLen, IgnoreEOS: true}})
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							lat = append(lat, time.Since(t0))
							prefilled[ep.group] += resp.MetaInfo.PromptTokens - resp.MetaInfo.CachedTokens
							mu.Unlock()
							in = append(append(in, resp.OutputIDs...), tools[t]...)
							if t == 0 && ep.leader {
								close(ep.first)
							}
						}
					})
				}
				wg.Wait()
				el := time.Since(start)
				c.Close()
				var retractions uint64
				for _, s := range srvs {
					retractions += s.Retractions()
				}
				slices.Sort(lat)
				short, long, ns, nl := 0, 0, 0, 0
				for g := range groups {
					if g%longEvery == longEvery-1 {
						long, nl = long+prefilled[fmt.Sprint("g", g)], nl+1
					} else {
						short, ns = short+prefilled[fmt.Sprint("g", g)], ns+1
					}
				}
				b.ReportMetric(float64(len(eps))/el.Seconds(), "episodes/s")
				b.ReportMetric(float64(short)/float64(ns), "prefill-tok/short-group")
				b.ReportMetric(float64(long)/float64(nl), "prefill-tok/long-group")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-turn-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-turn-ms")
				b.ReportMetric(float64(retractions), "retractions")
			}
		})
	}
}

// routingRounds is how often BenchmarkRouting runs each setting.
const routingRounds = 3
