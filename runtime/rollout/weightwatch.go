package rollout

import (
	"log/slog"
	"sync"
	"time"

	"github.com/agentrt/agentrt/tito"
)

// weightWatch notices a consumer whose trajectories keep one weight_version across its training steps: the sign
// that agentrt's SGLang server is not the one the trainer updates (a standalone server next to slime's router,
// say), so every step trains on rollouts from the first policy. A consumer is stale once its trajectories have
// carried the same version for at least `after`, over at least two rollout requests; it is warned about once
// per version, and counted by Stale until a new version arrives.
type weightWatch struct {
	after time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu   sync.Mutex
	runs map[string]*versionRun // by consumer
}

// versionRun is one consumer's current stretch of trajectories with one weight_version.
type versionRun struct {
	version      string
	since        time.Time
	requests     map[string]bool
	trajectories int
	warned       bool
}

func newWeightWatch(after time.Duration, log *slog.Logger) *weightWatch {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &weightWatch{after: after, now: time.Now, log: log, runs: map[string]*versionRun{}}
}

// observe records a finished trajectory of a consumer's request.
func (w *weightWatch) observe(consumer, requestID string, t *tito.Trajectory) {
	version := lastWeightVersion(t)
	if version == "" {
		return
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.runs[consumer]
	if r == nil || r.version != version {
		if r != nil && r.warned {
			w.log.Info("weight_version changed; rollouts follow the trainer's weights again", "consumer", consumer,
				"old", r.version, "new", version)
		}
		r = &versionRun{version: version, since: now, requests: map[string]bool{}}
		w.runs[consumer] = r
	}
	r.trajectories++
	if len(r.requests) < 2 {
		r.requests[requestID] = true
	}
	if !r.warned && len(r.requests) >= 2 && now.Sub(r.since) >= w.after {
		r.warned = true
		w.log.Warn("weight_version has not changed across this consumer's rollouts: the SGLang server agentrt uses "+
			"is probably not the one the trainer updates, so training is off-policy (point [sglang] at the trainer's "+
			"router or gateway: examples/math-python/README.md, \"Where agentrt sends /generate\")", "consumer", consumer, "weight_version", version,
			"since", r.since.UTC().Format(time.RFC3339), "trajectories", r.trajectories)
	}
}

// stale is the number of consumers warned about and still on the same weight_version.
func (w *weightWatch) stale() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.runs {
		if r.warned {
			n++
		}
	}
	return n
}

// lastWeightVersion is the version that generated the trajectory's last response.
func lastWeightVersion(t *tito.Trajectory) string {
	for i := len(t.Segments) - 1; i >= 0; i-- {
		if s := t.Segments[i]; s.Kind == tito.KindResponse && s.Info != nil {
			if n := len(s.Info.WeightVersions); n > 0 {
				return s.Info.WeightVersions[n-1].Version
			}
			return s.Info.WeightVersion
		}
	}
	return ""
}
