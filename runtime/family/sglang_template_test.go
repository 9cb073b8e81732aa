package family

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sglangTemplates are the templates SGLang's documentation has DeepSeek served with (--chat-template), kept in
// testdata/sglang-templates with their source: with them, the DeepSeek families pass the self-test.
var sglangTemplates = map[string]string{
	"deepseek-v3":   "tool_chat_template_deepseekv3.jinja",
	"deepseek-r1":   "tool_chat_template_deepseekv3.jinja",
	"deepseek-v3.1": "tool_chat_template_deepseekv31.jinja",
}

func TestSelfTestDeepSeekWithSGLangTemplates(t *testing.T) {
	for fam, file := range sglangTemplates {
		t.Run(fam, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "sglang-templates", file))
			if err != nil {
				t.Fatal(err)
			}
			m := loadRef(t, fam).WithChatTemplate(string(src), file)
			det, r := CheckModel(m, nil, fam, "", nil, nil)
			if err := r.Err(); err != nil {
				t.Fatalf("%s with %s: %v\n%s", fam, file, err, steps(r))
			}
			if det.Profile.Name != fam {
				t.Errorf("profile %s, want %s", det.Profile.Name, fam)
			}
			// The stock template is refused with the way out.
			_, r = CheckModel(loadRef(t, fam), nil, fam, "", nil, nil)
			if err := r.Err(); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "chat_template") {
				t.Errorf("stock %s template: %v; want a refusal naming chat_template and %s", fam, err, file)
			}
		})
	}
}
