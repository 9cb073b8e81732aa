package tito

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// newEnvironment builds the engine environment of transformers' chat templates. Each ChatTemplate gets its own
// copy of the filter and test tables, so nothing here touches the engine's package-level defaults.
func newEnvironment(now func() time.Time, frozen *frozenJSON) *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	_ = filters.Replace("tojson", func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		return filterToJSON(e, in, params, frozen)
	})
	_ = filters.Replace("items", filterItems)
	_ = filters.Replace("reverse", filterReverse)
	tests := exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests)
	_ = tests.Replace("true", testTrue)
	_ = tests.Replace("false", testFalse)
	globals := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	globals.Set("range", rangeFunction)
	globals.Set("dict", dictFunction)
	globals.Set("strftime_now", func(format *exec.Value) (string, error) {
		return strftime(now(), format.String()), nil
	})
	return &exec.Environment{
		Context:           globals,
		Filters:           filters,
		Tests:             tests,
		ControlStructures: builtins.ControlStructures,
		Methods: exec.Methods{
			Bool:  builtins.Methods.Bool,
			Int:   builtins.Methods.Int,
			Float: builtins.Methods.Float,
			Str:   builtins.Methods.Str,
			Dict:  dictMethods(),
			List:  listMethods(),
		},
	}
}

// dictMethods are the read-only dict methods, over the dict as the template holds it (the engine's own convert
// it to a Go map first, which loses key order). The mutating ones (pop, update, setdefault, clear) are left out,
// as transformers' immutable sandbox forbids them.
func dictMethods() *exec.MethodSet[map[string]any] {
	noArgs := func(name string, a *exec.VarArgs) error {
		if len(a.Args) > 0 || len(a.KwArgs) > 0 {
			return exec.ErrInvalidCall(fmt.Errorf("%s() takes no arguments", name))
		}
		return nil
	}
	return exec.NewMethodSet(map[string]exec.Method[map[string]any]{
		"get": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if len(a.Args) < 1 || len(a.Args) > 2 || len(a.KwArgs) > 0 {
				return nil, exec.ErrInvalidCall(errors.New("get() takes 1 or 2 positional arguments"))
			}
			for _, k := range self.Keys() {
				if k.EqualValueTo(a.Args[0]) {
					v, _ := self.GetItem(k.Interface())
					return v.Interface(), nil // the engine wraps what a method returns
				}
			}
			if len(a.Args) == 2 {
				return a.Args[1].Interface(), nil
			}
			return nil, nil
		},
		"keys": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if err := noArgs("keys", a); err != nil {
				return nil, err
			}
			out := []any{}
			for _, k := range self.Keys() {
				out = append(out, k)
			}
			return out, nil
		},
		"values": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if err := noArgs("values", a); err != nil {
				return nil, err
			}
			out := []any{}
			for _, k := range self.Keys() {
				v, _ := self.GetItem(k.Interface())
				out = append(out, v)
			}
			return out, nil
		},
		"items": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if err := noArgs("items", a); err != nil {
				return nil, err
			}
			out := []any{}
			for _, k := range self.Keys() {
				v, _ := self.GetItem(k.Interface())
				out = append(out, []any{k, v})
			}
			return out, nil
		},
		"copy": func(_ map[string]any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if err := noArgs("copy", a); err != nil {
				return nil, err
			}
			return self.Interface(), nil
		},
	})
}

// listMethods are the read-only list methods (append and reverse are forbidden in transformers' sandbox).
func listMethods() *exec.MethodSet[[]any] {
	return exec.NewMethodSet(map[string]exec.Method[[]any]{
		"copy": func(_ []any, self *exec.Value, a *exec.VarArgs) (any, error) {
			return self.Interface(), nil
		},
		"index": func(_ []any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if len(a.Args) != 1 {
				return nil, exec.ErrInvalidCall(errors.New("index() takes 1 argument"))
			}
			for i := range self.Len() {
				if exec.ToValue(self.Index(i)).EqualValueTo(a.Args[0]) {
					return i, nil
				}
			}
			return nil, fmt.Errorf("%s is not in list", a.Args[0].String())
		},
		"count": func(_ []any, self *exec.Value, a *exec.VarArgs) (any, error) {
			if len(a.Args) != 1 {
				return nil, exec.ErrInvalidCall(errors.New("count() takes 1 argument"))
			}
			n := 0
			for i := range self.Len() {
				if exec.ToValue(self.Index(i)).EqualValueTo(a.Args[0]) {
					n++
				}
			}
			return n, nil
		},
	})
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False), with those parameters also accepted positionally in that order.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs, frozen *frozenJSON) *exec.Value {
	if in.IsError() {
		return in
	}
	d, isFrozen := in.Interface().(*exec.Dict)
	isFrozen = isFrozen && frozen.has(d)
	var key string
	if isFrozen {
		key = fmt.Sprintf("%v|%v", params.Args, params.KwArgs)
		if s, ok := frozen.get(d, key); ok {
			return exec.AsSafeValue(s)
		}
	}
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	args := map[string]*exec.Value{}
	for i, a := range params.Args {
		if i >= len(names) {
			return exec.AsValue(errors.New("tojson: too many positional arguments"))
		}
		args[names[i]] = a
	}
	for k, v := range params.KwArgs {
		if !tmplContains(names, k) {
			return exec.AsValue(fmt.Errorf("tojson: unexpected keyword argument %q", k))
		}
		args[k] = v
	}
	o := pyJSON{itemSep: ", ", keySep: ": "}
	if v := args["ensure_ascii"]; v != nil {
		o.ensureASCII = v.IsTrue()
	}
	if v := args["sort_keys"]; v != nil {
		o.sortKeys = v.IsTrue()
	}
	if v := args["indent"]; v != nil && !v.IsNil() {
		var ind string
		switch {
		case v.IsString():
			ind = v.String()
		case v.IsInteger():
			ind = strings.Repeat(" ", max(v.Integer(), 0))
		default:
			return exec.AsValue(fmt.Errorf("tojson: indent must be an int or a string"))
		}
		o.indent = &ind
		o.itemSep = ","
	}
	if v := args["separators"]; v != nil && !v.IsNil() {
		if !v.IsList() || v.Len() != 2 {
			return exec.AsValue(errors.New("tojson: separators must be a pair of strings"))
		}
		o.itemSep, o.keySep = exec.ToValue(v.Index(0)).String(), exec.ToValue(v.Index(1)).String()
	}
	s, err := o.dumps(in)
	if err != nil {
		return exec.AsValue(err)
	}
	if isFrozen {
		frozen.put(d, key, s)
	}
	return exec.AsSafeValue(s)
}

// frozenJSON caches the tojson text of dicts that never change: the converted tool specs of prepared options,
// which templates print with tojson on every render.
type frozenJSON struct {
	mu    sync.RWMutex
	dicts map[*exec.Dict]map[string]string // by tojson arguments
}

func (f *frozenJSON) freeze(d *exec.Dict) {
	f.mu.Lock()
	if f.dicts == nil {
		f.dicts = map[*exec.Dict]map[string]string{}
	}
	if _, ok := f.dicts[d]; !ok {
		f.dicts[d] = map[string]string{}
	}
	f.mu.Unlock()
}

func (f *frozenJSON) has(d *exec.Dict) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, ok := f.dicts[d]
	return ok
}

func (f *frozenJSON) get(d *exec.Dict, key string) (string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.dicts[d][key]
	return s, ok
}

func (f *frozenJSON) put(d *exec.Dict, key, s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.dicts[d]; ok && len(m) < 16 {
		m[key] = s
	}
}

func tmplContains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// filterItems is Jinja's items filter: (key, value) pairs of a mapping in its order, nothing for undefined.
func filterItems(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if len(params.Args) > 0 || len(params.KwArgs) > 0 {
		return exec.AsValue(errors.New("items takes no arguments"))
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	if !in.IsDict() {
		return exec.AsValue(fmt.Errorf("can only get item pairs from a mapping"))
	}
	var out []any
	for _, k := range in.Keys() {
		v, _ := in.GetItem(k.Interface())
		out = append(out, []any{k.Interface(), v.Interface()})
	}
	if out == nil {
		out = []any{}
	}
	return exec.AsValue(out)
}

// filterReverse is Jinja's reverse: a string with its characters reversed, or the items of a sequence (the keys
// of a mapping) in reverse order. The engine's own reverses bytes and sorts lists.
func filterReverse(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if len(params.Args) > 0 || len(params.KwArgs) > 0 {
		return exec.AsValue(errors.New("reverse takes no arguments"))
	}
	switch {
	case in.IsString():
		r := []rune(in.String())
		slices.Reverse(r)
		return exec.AsValue(string(r))
	case in.IsList():
		out := make([]any, in.Len())
		for i := range out {
			out[len(out)-1-i] = exec.ToValue(in.Index(i)).Interface()
		}
		return exec.AsValue(out)
	case in.IsDict():
		keys := in.Keys()
		out := make([]any, len(keys))
		for i, k := range keys {
			out[len(out)-1-i] = k.Interface()
		}
		return exec.AsValue(out)
	}
	return exec.AsValue(fmt.Errorf("argument to reverse is not iterable"))
}

// testTrue and testFalse are Jinja's "is true" / "is false": identity with the booleans, so that an undefined or
// non-boolean value is neither.
func testTrue(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
	return in.IsBool() && in.Bool(), nil
}

func testFalse(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
	return in.IsBool() && !in.Bool(), nil
}

// rangeFunction is Python's range as a list (the engine's own streams through a goroutine that leaks when a loop
// breaks early).
func rangeFunction(params *exec.VarArgs) (*exec.Value, error) {
	var nums []int
	for _, a := range params.Args {
		if !a.IsInteger() {
			return nil, errors.New("range: arguments must be integers")
		}
		nums = append(nums, a.Integer())
	}
	start, stop, step := 0, 0, 1
	switch len(nums) {
	case 1:
		stop = nums[0]
	case 2:
		start, stop = nums[0], nums[1]
	case 3:
		start, stop, step = nums[0], nums[1], nums[2]
	default:
		return nil, errors.New("range: expected 1 to 3 integer arguments")
	}
	if step == 0 {
		return nil, errors.New("range: step must not be zero")
	}
	out := []any{}
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) >= 1_000_000 {
			return nil, errors.New("range: too many items")
		}
		out = append(out, i)
	}
	return exec.AsValue(out), nil
}

// dictFunction is dict(**kwargs), with keys in sorted order (the engine does not keep keyword order).
func dictFunction(params *exec.VarArgs) *exec.Value {
	keys := make([]string, 0, len(params.KwArgs))
	for k := range params.KwArgs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := exec.NewDict()
	for _, k := range keys {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: params.KwArgs[k]})
	}
	return exec.AsValue(d)
}

// strftime formats t as Python's datetime.strftime does for the directives chat templates use.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

var (
	rawStartRe = regexp.MustCompile(`^\{%[-+]?\s*raw\s*[-+]?%\}`)
	rawEndRe   = regexp.MustCompile(`\{%[-+]?\s*endraw\s*[-+]?%\}`)
)

// lstripBlocks applies Jinja's lstrip_blocks to a template source: whitespace between the start of a line and a
// block or comment tag is removed ("{%+" keeps it). The engine's own option also strips whitespace between two
// tags in the middle of a line, which Jinja keeps, so templates are rewritten here instead.
func lstripBlocks(src string) string {
	var b strings.Builder
	b.Grow(len(src))
	lineStart := 0 // index in b's output where the current line starts
	for i := 0; i < len(src); {
		c := src[i]
		if c != '{' || i+1 == len(src) || (src[i+1] != '%' && src[i+1] != '{' && src[i+1] != '#') {
			b.WriteByte(c)
			i++
			if c == '\n' {
				lineStart = b.Len()
			}
			continue
		}
		open := src[i+1]
		if (open == '%' || open == '#') && (i+2 >= len(src) || src[i+2] != '+') {
			out := b.String()
			if strings.TrimLeft(out[lineStart:], " \t\r\f\v") == "" {
				b.Reset()
				b.WriteString(out[:lineStart])
			}
		}
		end := tagEnd(src, i, open)
		tag := src[i:end]
		b.WriteString(tag)
		i = end
		if open == '%' && rawStartRe.MatchString(tag) {
			if loc := rawEndRe.FindStringIndex(src[i:]); loc != nil {
				body := src[i : i+loc[0]]
				b.WriteString(body)
				if j := strings.LastIndexByte(body, '\n'); j >= 0 {
					lineStart = b.Len() - len(body) + j + 1
				}
				i += loc[0]
			}
		}
		if j := strings.LastIndexByte(tag, '\n'); j >= 0 {
			lineStart = b.Len() - len(tag) + j + 1
		}
	}
	return b.String()
}

// tagEnd returns the index just past the tag that starts at src[i] ("{%", "{{" or "{#"), skipping string
// literals inside block and variable tags; the end of src if the tag is not closed.
func tagEnd(src string, i int, open byte) int {
	closer := map[byte]string{'%': "%}", '{': "}}", '#': "#}"}[open]
	j := i + 2
	for j < len(src) {
		c := src[j]
		if open != '#' && (c == '\'' || c == '"') {
			j++
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j++
			continue
		}
		if strings.HasPrefix(src[j:], closer) {
			return j + len(closer)
		}
		j++
	}
	return len(src)
}
