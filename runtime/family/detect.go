package family

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/parsers"
	"github.com/agentrt/agentrt/tito"
)

// ErrUnknownFamily reports a family name that is not in Profiles, or a model folder that no profile matches.
var ErrUnknownFamily = errors.New("family: unknown model family")

// Names lists the families of Profiles, in table order.
func Names() []string {
	names := make([]string, len(Profiles))
	for i := range Profiles {
		names[i] = Profiles[i].Name
	}
	return names
}

// Lookup returns the profile named name.
//
// # Errors
//
// ErrUnknownFamily (wrapped, with the known names).
func Lookup(name string) (*Profile, error) {
	for i := range Profiles {
		if Profiles[i].Name == name {
			return &Profiles[i], nil
		}
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFamily, name, strings.Join(Names(), ", "))
}

// Detection is which profile applies to a model folder and how that was decided.
type Detection struct {
	Profile *Profile
	// By says how the profile was chosen: "runtime.toml family", "chat template", "special tokens".
	By string
	// Others are other families whose fingerprints matched too (the first in table order wins).
	Others []string
}

// Detect finds the family of a model folder: by its chat template's fingerprints, else by its special tokens
// (BOS, EOS, additional and added tokens). name, when not "", overrides detection.
//
// # Errors
//
// ErrUnknownFamily (wrapped) for an unknown name, or when nothing matches; the error says what to set.
func Detect(m *tito.Model, name string) (Detection, error) {
	if name != "" {
		p, err := Lookup(name)
		if err != nil {
			return Detection{}, err
		}
		return Detection{Profile: p, By: "family = " + name}, nil
	}
	var hits []*Profile
	for i := range Profiles {
		if matchTemplate(&Profiles[i], m.TemplateSource) {
			hits = append(hits, &Profiles[i])
		}
	}
	by := "chat template"
	if len(hits) == 0 {
		hits, by = matchTokens(m), "special tokens"
	}
	if len(hits) == 0 {
		return Detection{}, fmt.Errorf("%w: model %s: its chat template and special tokens match no known family; set family (one of %s) and, for a format of your own, parser",
			ErrUnknownFamily, m.Dir, strings.Join(Names(), ", "))
	}
	d := Detection{Profile: hits[0], By: by}
	for _, p := range hits[1:] {
		d.Others = append(d.Others, p.Name)
	}
	return d, nil
}

func matchTemplate(p *Profile, src string) bool {
	if src == "" || len(p.Template) == 0 {
		return false
	}
	for _, s := range p.Template {
		if !strings.Contains(src, s) {
			return false
		}
	}
	for _, s := range p.NotTemplate {
		if strings.Contains(src, s) {
			return false
		}
	}
	return true
}

// matchTokens returns the families whose distinctive tokens the folder's special tokens all include. Only a
// unique match counts: several families share a vocabulary.
func matchTokens(m *tito.Model) []*Profile {
	have := map[string]bool{}
	for _, t := range []string{m.BOSToken, m.EOSToken, m.PadToken, m.UnkToken} {
		have[t] = true
	}
	for _, t := range m.AdditionalSpecialTokens {
		have[t] = true
	}
	for _, t := range m.AddedTokens {
		have[t.Content] = true
	}
	var hits []*Profile
	for i := range Profiles {
		p := &Profiles[i]
		if len(p.Tokens) == 0 {
			continue
		}
		all := true
		for _, t := range p.Tokens {
			all = all && have[t]
		}
		if all {
			hits = append(hits, p)
		}
	}
	if len(hits) != 1 {
		return nil
	}
	return hits
}

// Builtin reports whether a parser name is one of the built-in parsers.
func Builtin(parser string) bool { return slices.Contains(parsers.Names(), parser) }

// Why returns why the family cannot run agents with its own parser, or "" when it can: its row says it is
// unsupported, or its parser is not built in (yet).
func (p *Profile) Why() string {
	switch {
	case p.Unsupported != "":
		return p.Unsupported
	case p.Parser == "":
		return "no tool-call parser"
	case !Builtin(p.Parser):
		return fmt.Sprintf("its tool-call parser %q is not built in yet (built-ins: %s)", p.Parser, strings.Join(parsers.Names(), ", "))
	}
	return ""
}

// ParserLoader returns a ParseFunc for a parser name (given the specs of Tools) and a function that releases it.
type ParserLoader func(parser string) (ParseFunc, func(), error)

// CheckModel detects (or looks up, when name is set) the family of a loaded model, picks the parser (parser,
// else the family's) and runs the self-test with the model's chat template (tmpl; nil parses the model's). load
// may be nil: built-in parsers then run natively. The Report's first check says which family applies and how it
// was found; Report.Err is nil when the model can run agents.
func CheckModel(m *tito.Model, tmpl *tito.ChatTemplate, name, parser string, kwargs map[string]any, load ParserLoader) (Detection, *Report) {
	d, err := Detect(m, name)
	if err != nil {
		r := &Report{Family: "unknown", Parser: parser}
		r.add("detection", false, "%v", err)
		return d, r
	}
	if parser == "" {
		parser = d.Profile.Parser
	}
	r := &Report{Family: d.Profile.Name, Parser: parser}
	r.add("family", true, "%s (by %s)", d.Profile.Name, d.By)
	if tmpl == nil {
		if tmpl, err = m.ChatTemplate(d.Profile.TemplateOptions()...); err != nil {
			r.add("chat template", false, "%v", err)
			return d, r
		}
	}
	var parse ParseFunc
	if load != nil && (Builtin(parser) || strings.HasSuffix(parser, ".wasm")) {
		var release func()
		if parse, release, err = load(parser); err != nil {
			r.add("parser", false, "%v", err)
			return d, r
		}
		defer release()
	}
	st := SelfTest(SelfTestInput{Model: m, Template: tmpl, Profile: d.Profile, Parser: parser, Parse: parse, Kwargs: kwargs})
	r.Checks = append(r.Checks, st.Checks...)
	r.History, r.HistoryRewritten = st.History, st.HistoryRewritten
	r.Window, r.WindowDetail = st.Window, st.WindowDetail
	return d, r
}

// TemplateOptions are the chat template options the family needs: its stop tokens, so that deltas know where a
// turn ends (and which stop token begins the next message).
func (p *Profile) TemplateOptions() []tito.TemplateOption {
	return []tito.TemplateOption{tito.WithEndOfTurn(p.Stops...), tito.WithRewrittenEnd(p.RewrittenEnd)}
}
