package emulator

// LogprobWindow is how many preceding ids Logprob looks at.
const LogprobWindow = 3

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Logprob is the emulator's deterministic "model": the log-probability of token id after the ids in prefix. Only
// the last LogprobWindow ids of prefix matter. The emulator reports it for every output token and every prompt
// token (input_token_logprobs), so a client can recompute each logprob of a trajectory from the trajectory alone:
// the token at position p has Logprob(traj[max(0, p-3):p], traj[p]).
//
// The formula (exact in IEEE-754 double arithmetic, so a Python port agrees bit for bit):
//
//	h := FNV-1a 64-bit (offset 14695981039346656037, prime 1099511628211) over the bytes of
//	     w[0], ..., w[k-1], id, each as 4 bytes little-endian of uint32(x),
//	     where w = the last k = min(3, len(prefix)) ids of prefix, oldest first
//	u := float64(h >> 11) * 2^-53               // in [0, 1)
//	logprob := -10.0 * u * u * u               // evaluated left to right, in (-10, 0]
//
// In Python:
//
//	def logprob(prefix, tid):
//	    h = 0xcbf29ce484222325
//	    for x in list(prefix[-3:]) + [tid]:
//	        for b in (x & 0xffffffff).to_bytes(4, "little"):
//	            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
//	    u = (h >> 11) * 2.0**-53
//	    return -10.0 * u * u * u
func Logprob(prefix []int32, id int32) float64 {
	if len(prefix) > LogprobWindow {
		prefix = prefix[len(prefix)-LogprobWindow:]
	}
	h := uint64(fnvOffset64)
	mix := func(x int32) {
		v := uint32(x)
		for i := 0; i < 4; i++ {
			h ^= uint64(byte(v >> (8 * i)))
			h *= fnvPrime64
		}
	}
	for _, x := range prefix {
		mix(x)
	}
	mix(id)
	u := float64(h>>11) * (1.0 / (1 << 53))
	return -10.0 * u * u * u
}

// logprobAt is Logprob for position p of the concatenation a ++ b (p indexes into the concatenation).
func logprobAt(a, b []int32, p int) float64 {
	var w [LogprobWindow]int32
	n := 0
	for q := max(0, p-LogprobWindow); q < p; q++ {
		w[n] = at(a, b, q)
		n++
	}
	return Logprob(w[:n], at(a, b, p))
}

func at(a, b []int32, q int) int32 {
	if q < len(a) {
		return a[q]
	}
	return b[q-len(a)]
}
