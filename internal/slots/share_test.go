package slots

import "testing"

// The parts of a limit add up to it exactly, whatever the number of nodes (a node may get 0); None is nothing,
// the zero Share the whole; Also caps a part by another; 0 (unlimited) stays unlimited.
func TestShare(t *testing.T) {
	for _, n := range []int{1, 2, 5, 7, 64, 1024} {
		for nodes := 1; nodes <= 9; nodes++ {
			sum, rate := 0, 0.0
			for rank := range nodes {
				p := Share{Rank: rank, Nodes: nodes}.Of(n)
				if p < n/nodes || p > n/nodes+1 {
					t.Fatalf("limit %d, %d nodes: rank %d gets %d", n, nodes, rank, p)
				}
				sum += p
				rate += Share{Rank: rank, Nodes: nodes}.OfRate(float64(n))
			}
			if sum != n || rate < float64(n)-1e-9 || rate > float64(n)+1e-9 {
				t.Fatalf("limit %d, %d nodes: parts add up to %d (rates %v)", n, nodes, sum, rate)
			}
		}
	}
	if got := (Share{}).Of(7); got != 7 {
		t.Errorf("zero Share: %d of 7", got)
	}
	if got, r := None.Of(7), None.OfRate(3); got != 0 || r != 0 {
		t.Errorf("None: %d of 7, %v of 3/s", got, r)
	}
	old := Share{Rank: 0, Nodes: 2}               // 4 of 7
	s := Share{Rank: 0, Nodes: 3, Also: &old}     // min(3, 4)
	grow := Share{Rank: 0, Nodes: 1, Also: &None} // min(7, 0)
	if s.Of(7) != 3 || grow.Of(7) != 0 || grow.OfRate(2) != 0 {
		t.Errorf("Also: %d, %d, %v", s.Of(7), grow.Of(7), grow.OfRate(2))
	}
	if (Share{Rank: 2, Nodes: 3}).Of(0) != 0 || None.Of(0) != 0 || None.OfRate(0) != 0 {
		t.Error("unlimited (0) must stay unlimited")
	}
}
