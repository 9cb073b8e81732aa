// Command math_reward is agentrt's built-in math reward, a hook plugin (GOOS=wasip1, -buildmode=c-shared) for
// episode_end: it takes the final answer from the last assistant message (the content of the last \boxed{...}, else
// the last number), normalises it and the episode's label (LaTeX basics such as \frac, \dfrac, \left/\right, $,
// thousands separators, trailing zeros), compares them and sets the reward to 1 (match) or 0, with metrics saying
// which extraction and which comparison rule applied:
//
//   - math_correct: 1 or 0 (the reward);
//   - math_extract_boxed / math_extract_last_number / math_extract_none: how the answer was found;
//   - math_match_exact (equal strings after normalisation), math_match_numeric (equal rationals: "0.5" = "1/2" =
//     "\frac{1}{2}"), math_match_approx (equal within the relative tolerance, for rounded decimals);
//   - math_no_label: 1 when the episode had no label (the reward is then 0).
//
// Config (all optional): {"tolerance": 1e-6, "boxed_only": false}. The logic (this file) builds natively and is
// unit-tested; registration is in plugin_wasip1.go.
package main

import (
	"math"
	"math/big"
	"regexp"
	"strings"
)

func main() {}

// config is the hook's configuration.
type config struct {
	tolerance float64 // relative tolerance of math_match_approx; 0 disables it
	boxedOnly bool    // no last-number fallback
}

func defaultConfig() config { return config{tolerance: 1e-6} }

// verdict is a scored answer.
type verdict struct {
	answer  string // the extracted answer, as written
	extract string // "boxed", "last_number", "none"
	match   string // "exact", "numeric", "approx", "" (no match)
}

func (v verdict) correct() bool { return v.match != "" }

// metrics are the verdict as the trajectory's metrics.
func (v verdict) metrics() map[string]float64 {
	m := map[string]float64{"math_correct": 0, "math_extract_" + v.extract: 1}
	if v.correct() {
		m["math_correct"] = 1
		m["math_match_"+v.match] = 1
	}
	return m
}

// score extracts the answer from a response and compares it with the label.
func (c config) score(response, label string) verdict {
	v := verdict{extract: "none"}
	if i := strings.LastIndex(response, "</think>"); i >= 0 {
		response = response[i+len("</think>"):]
	}
	if b, ok := lastBoxed(response); ok {
		v.answer, v.extract = b, "boxed"
	} else if !c.boxedOnly {
		if n := lastNumber(response); n != "" {
			v.answer, v.extract = n, "last_number"
		}
	}
	if v.extract == "none" {
		return v
	}
	v.match = c.compare(v.answer, label)
	return v
}

// lastBoxed returns the content of the last \boxed{...} (or \fbox{...}), braces balanced.
func lastBoxed(s string) (string, bool) {
	i := max(strings.LastIndex(s, `\boxed`), strings.LastIndex(s, `\fbox`))
	if i < 0 {
		return "", false
	}
	rest := s[i:]
	open := strings.IndexByte(rest, '{')
	if open < 0 {
		// "\boxed 5": the next token
		f := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(rest, `\boxed`), `\fbox`))
		if len(f) == 0 {
			return "", false
		}
		return strings.TrimRight(f[0], "$.,"), true
	}
	depth := 0
	for j := open; j < len(rest); j++ {
		switch rest[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return strings.TrimSpace(rest[open+1 : j]), true
			}
		}
	}
	return "", false
}

var numberRE = regexp.MustCompile(`-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?|-?\.\d+`)

// lastNumber returns the last number in s ("1,234.5", "-3", "3/4"), or "".
func lastNumber(s string) string {
	all := numberRE.FindAllString(s, -1)
	if len(all) == 0 {
		return ""
	}
	return strings.TrimRight(all[len(all)-1], ",")
}

var (
	fracRE      = regexp.MustCompile(`\\frac\{([^{}]*)\}\{([^{}]*)\}`)
	shortFracRE = regexp.MustCompile(`\\frac(\d)(\d)`)
	textRE      = regexp.MustCompile(`\\(?:text|textbf|mathrm|mathbf|mbox)\{([^{}]*)\}`)
	sqrtRE      = regexp.MustCompile(`\\sqrt\{([^{}]*)\}`)
	thousandsRE = regexp.MustCompile(`(\d),(\d{3})\b`)
	trailZeroRE = regexp.MustCompile(`^(-?\d+)\.0*$|^(-?\d+\.\d*?)0+$`)
)

// normalize rewrites an answer into a canonical plain form: "\dfrac{3}{4}" -> "3/4", "$1,000.50$" -> "1000.5",
// "\left( 2, 3 \right)" -> "(2,3)".
func normalize(s string) string {
	s = strings.TrimSpace(s)
	for _, r := range []struct{ old, new string }{
		{`\dfrac`, `\frac`}, {`\tfrac`, `\frac`}, {`\left`, ``}, {`\right`, ``}, {`\!`, ``}, {`\,`, ``},
		{`\;`, ``}, {`\:`, ``}, {`\ `, ``}, {`$`, ``}, {`\displaystyle`, ``}, {`^\circ`, ``}, {`^{\circ}`, ``},
		{`\%`, ``}, {`%`, ``}, {`\cdot`, `*`}, {`\times`, `*`}, {`\div`, `/`}, {`\pi`, `pi`},
	} {
		s = strings.ReplaceAll(s, r.old, r.new)
	}
	s = textRE.ReplaceAllString(s, "$1")
	s = sqrtRE.ReplaceAllString(s, "sqrt($1)")
	s = shortFracRE.ReplaceAllString(s, `\frac{$1}{$2}`)
	for fracRE.MatchString(s) {
		s = fracRE.ReplaceAllStringFunc(s, func(m string) string {
			p := fracRE.FindStringSubmatch(m)
			return group(p[1]) + "/" + group(p[2])
		})
	}
	for thousandsRE.MatchString(s) {
		s = thousandsRE.ReplaceAllString(s, "$1$2")
	}
	s = strings.Join(strings.Fields(s), "")
	s = strings.TrimRight(s, ".")
	for len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' {
		s = s[1 : len(s)-1]
	}
	// "x = 5" -> "5"
	if i := strings.LastIndexByte(s, '='); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	if m := trailZeroRE.FindStringSubmatch(s); m != nil {
		s = m[1] + m[2]
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// group parenthesises a fraction part unless it is a plain number or name.
func group(s string) string {
	s = strings.TrimSpace(s)
	if plainRE.MatchString(s) {
		return s
	}
	return "(" + s + ")"
}

var plainRE = regexp.MustCompile(`^-?[0-9a-zA-Z.]+$`)

// rational parses an integer, a decimal, a fraction "a/b" (each part possibly parenthesised or negative) or a
// mixed number "1 1/2" (already without spaces here: not supported), or fails.
func rational(s string) (*big.Rat, bool) {
	s = strings.TrimSpace(s)
	if num, den, ok := strings.Cut(s, "/"); ok {
		a, ok1 := rational(strings.Trim(num, "()"))
		b, ok2 := rational(strings.Trim(den, "()"))
		if !ok1 || !ok2 || b.Sign() == 0 || strings.Contains(den, "/") {
			return nil, false
		}
		return new(big.Rat).Quo(a, b), true
	}
	s = strings.TrimPrefix(strings.TrimSuffix(s, ")"), "(")
	if s == "" || strings.ContainsAny(s, "eE") {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// compare returns the rule by which answer matches label, or "".
func (c config) compare(answer, label string) string {
	a, l := normalize(answer), normalize(label)
	if a == "" || l == "" {
		return ""
	}
	if a == l {
		return "exact"
	}
	ra, oka := rational(a)
	rl, okl := rational(l)
	if !oka || !okl {
		return ""
	}
	if ra.Cmp(rl) == 0 {
		return "numeric"
	}
	if c.tolerance > 0 {
		fa, _ := ra.Float64()
		fl, _ := rl.Float64()
		if math.Abs(fa-fl) <= c.tolerance*math.Max(1, math.Abs(fl)) {
			return "approx"
		}
	}
	return ""
}
