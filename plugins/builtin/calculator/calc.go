// Command calculator is agentrt's built-in calculator tool, a Wasm plugin (GOOS=wasip1, -buildmode=c-shared).
// It evaluates arithmetic expressions: + - * / % ** (power), parentheses, unary minus and plus, decimals and
// exponent notation (1.5e3). Operator precedence and the floored modulo follow Python, because that is what
// models expect: -2**2 = -4, 2**-1 = 0.5, -7 % 3 = 2. Bad input gets an error that says what and where.
//
// The evaluator (this file) builds natively and is unit-tested; registration is in plugin_wasip1.go.
package main

import (
	"fmt"
	"math"
	"strconv"
)

func main() {}

// calcError is an evaluation error with a code for the error envelope.
type calcError struct {
	code string
	msg  string
}

func (e *calcError) Error() string { return e.msg }

func errAt(code string, pos int, format string, args ...any) *calcError {
	return &calcError{code: code, msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" at offset %d", pos)}
}

const maxExprLen = 10000

type calc struct {
	s     string
	i     int
	depth int
}

// evaluate parses and evaluates expr.
func evaluate(expr string) (float64, error) {
	if len(expr) > maxExprLen {
		return 0, &calcError{code: "bad_input", msg: fmt.Sprintf("expression too long (%d bytes, limit %d)", len(expr), maxExprLen)}
	}
	c := &calc{s: expr}
	c.ws()
	if c.i == len(c.s) {
		return 0, &calcError{code: "bad_input", msg: "empty expression"}
	}
	v, err := c.add()
	if err != nil {
		return 0, err
	}
	c.ws()
	if c.i < len(c.s) {
		if c.s[c.i] == ')' {
			return 0, errAt("syntax_error", c.i, "unmatched ')'")
		}
		return 0, errAt("syntax_error", c.i, "unexpected %q", c.s[c.i])
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, &calcError{code: "overflow", msg: "result is not a finite number"}
	}
	return v, nil
}

// format renders v: integral values up to 2^53 without a fraction, others in the shortest form that round-trips.
func format(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
		if v == 0 {
			return "0"
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (c *calc) ws() {
	for c.i < len(c.s) && (c.s[c.i] == ' ' || c.s[c.i] == '\t' || c.s[c.i] == '\n' || c.s[c.i] == '\r') {
		c.i++
	}
}

func (c *calc) add() (float64, error) {
	v, err := c.mul()
	if err != nil {
		return 0, err
	}
	for {
		c.ws()
		if c.i >= len(c.s) || (c.s[c.i] != '+' && c.s[c.i] != '-') {
			return v, nil
		}
		op := c.s[c.i]
		c.i++
		w, err := c.mul()
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
}

func (c *calc) mul() (float64, error) {
	v, err := c.unary()
	if err != nil {
		return 0, err
	}
	for {
		c.ws()
		if c.i >= len(c.s) {
			return v, nil
		}
		op := c.s[c.i]
		if op != '*' && op != '/' && op != '%' || (op == '*' && c.i+1 < len(c.s) && c.s[c.i+1] == '*') {
			return v, nil
		}
		pos := c.i
		c.i++
		w, err := c.unary()
		if err != nil {
			return 0, err
		}
		switch op {
		case '*':
			v *= w
		case '/':
			if w == 0 {
				return 0, errAt("division_by_zero", pos, "division by zero")
			}
			v /= w
		case '%':
			if w == 0 {
				return 0, errAt("division_by_zero", pos, "modulo by zero")
			}
			m := math.Mod(v, w)
			if m != 0 && (m < 0) != (w < 0) {
				m += w
			}
			v = m
		}
	}
}

func (c *calc) unary() (float64, error) {
	c.ws()
	if c.i < len(c.s) && (c.s[c.i] == '-' || c.s[c.i] == '+') {
		op := c.s[c.i]
		c.i++
		if c.depth++; c.depth > 200 {
			return 0, errAt("bad_input", c.i, "expression nested too deeply")
		}
		v, err := c.unary()
		c.depth--
		if op == '-' {
			v = -v
		}
		return v, err
	}
	return c.power()
}

func (c *calc) power() (float64, error) {
	base, err := c.primary()
	if err != nil {
		return 0, err
	}
	c.ws()
	if c.i+1 < len(c.s) && c.s[c.i] == '*' && c.s[c.i+1] == '*' {
		pos := c.i
		c.i += 2
		exp, err := c.unary() // right-associative, and the exponent may be signed: 2**-1
		if err != nil {
			return 0, err
		}
		if base == 0 && exp < 0 {
			return 0, errAt("division_by_zero", pos, "zero raised to a negative power")
		}
		r := math.Pow(base, exp)
		if math.IsNaN(r) {
			return 0, errAt("bad_input", pos, "negative number raised to a fractional power")
		}
		return r, nil
	}
	return base, nil
}

func (c *calc) primary() (float64, error) {
	c.ws()
	if c.i >= len(c.s) {
		return 0, errAt("syntax_error", c.i, "unexpected end of expression")
	}
	ch := c.s[c.i]
	switch {
	case ch == '(':
		open := c.i
		c.i++
		if c.depth++; c.depth > 200 {
			return 0, errAt("bad_input", c.i, "expression nested too deeply")
		}
		v, err := c.add()
		c.depth--
		if err != nil {
			return 0, err
		}
		c.ws()
		if c.i >= len(c.s) || c.s[c.i] != ')' {
			return 0, errAt("syntax_error", open, "unclosed '('")
		}
		c.i++
		return v, nil
	case ch >= '0' && ch <= '9' || ch == '.':
		start := c.i
		for c.i < len(c.s) && (c.s[c.i] >= '0' && c.s[c.i] <= '9' || c.s[c.i] == '.') {
			c.i++
		}
		if c.i < len(c.s) && (c.s[c.i] == 'e' || c.s[c.i] == 'E') {
			j := c.i + 1
			if j < len(c.s) && (c.s[j] == '+' || c.s[j] == '-') {
				j++
			}
			if j < len(c.s) && c.s[j] >= '0' && c.s[j] <= '9' {
				for j < len(c.s) && c.s[j] >= '0' && c.s[j] <= '9' {
					j++
				}
				c.i = j
			}
		}
		v, err := strconv.ParseFloat(c.s[start:c.i], 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, errAt("overflow", start, "number %s out of range", c.s[start:c.i])
			}
			return 0, errAt("syntax_error", start, "invalid number %q", c.s[start:c.i])
		}
		return v, nil
	case ch == ')':
		return 0, errAt("syntax_error", c.i, "unexpected ')'")
	default:
		return 0, &calcError{code: "syntax_error", msg: fmt.Sprintf("unexpected %q at offset %d: only numbers, + - * / %% ** and parentheses are allowed", ch, c.i)}
	}
}
