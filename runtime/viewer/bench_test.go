package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/tito"
)

// BenchmarkRingAdd is what the rollout service pays per finished episode for the viewer: a summary, a lock, an
// eviction, a non-blocking offer to the page's subscribers.
func BenchmarkRingAdd(b *testing.B) {
	for _, subs := range []int{0, 4} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			r := NewRing("bench", 500, 256<<20)
			defer r.Close()
			for range subs {
				sub := r.Subscribe()
				defer sub.Close()
			}
			trs := make([]*tito.Trajectory, 1000)
			for i := range trs {
				trs[i] = traj(b, fmt.Sprintf("r/g%d/%d", i/8, i%8), fmt.Sprintf("r/g%d", i/8), "completed", f64(1), "calc")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.Add(trs[i%len(trs)])
			}
		})
	}
}

// BenchmarkTokenTexts decodes the texts of a 4,096-token Qwen3 trajectory, as a detail request does.
func BenchmarkTokenTexts(b *testing.B) {
	dir := os.Getenv("AGENTRT_QWEN3_MODEL")
	if dir == "" {
		b.Skip("$AGENTRT_QWEN3_MODEL is not set")
	}
	tok, err := tito.LoadTokenizer(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	defer tok.Close()
	text := strings.Repeat("The calculator says 17*23+5 = 396. 你好，世界！🚀 <tool_call>\n{\"name\": \"calc\"}\n</tool_call>\n", 200)
	ids := tok.Encode(text, true)[:4096]
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tokenTexts(tok, ids)
	}
}
