package emulator

import (
	"reflect"
	"testing"
)

// DeepSeek prompts as SGLang's tool templates render them (V3: tool outputs wrapped in <｜tool▁outputs▁begin｜>
// and answered without an <｜Assistant｜> marker; V3.1: bare tool outputs) split into their messages.
func TestSplitDeepSeek(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []message
		open       *message
	}{
		{"first prompt", "<｜begin▁of▁sentence｜>Be careful.\n\ntools...<｜User｜>2+3?<｜Assistant｜>",
			[]message{{"system", "Be careful.\n\ntools..."}, {"user", "2+3?"}}, &message{"assistant", ""}},
		{"v3 after two tool outputs", "<｜begin▁of▁sentence｜>S<｜User｜>2+3?<｜Assistant｜><｜tool▁calls▁begin｜>x<｜tool▁calls▁end｜><｜end▁of▁sentence｜>" +
			"Use the results below.<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>5<｜tool▁output▁end｜>\n<｜tool▁output▁begin｜>6<｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
			[]message{{"system", "S"}, {"user", "2+3?"}, {"assistant", "<｜tool▁calls▁begin｜>x<｜tool▁calls▁end｜>"}, {"tool", "5"}, {"tool", "6"}}, &message{"assistant", ""}},
		{"v3.1 answered", "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜></think>call<｜end▁of▁sentence｜><｜tool▁output▁begin｜>5<｜tool▁output▁end｜>It is 5.<｜end▁of▁sentence｜><｜User｜>more",
			[]message{{"user", "q"}, {"assistant", "</think>call"}, {"tool", "5"}, {"assistant", "It is 5."}, {"user", "more"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, open := splitDeepSeek(tc.text)
			if !reflect.DeepEqual(msgs, tc.want) || !reflect.DeepEqual(open, tc.open) {
				t.Fatalf("got %q open %v\nwant %q open %v", msgs, open, tc.want, tc.open)
			}
		})
	}
}
