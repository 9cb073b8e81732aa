package command

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// noLinkFS is a scratch directory that refuses symlink and hard-link
// creation. wazero resolves a guest path on the host with the host's own
// path walk, so a guest-made link such as os.symlink('../../../etc', 'e')
// would be followed out of the mount; refusing to create links closes that
// route at its root (scratch directories start empty, so no link can exist).
type noLinkFS struct{ experimentalsys.FS }

func (noLinkFS) Symlink(string, string) experimentalsys.Errno { return experimentalsys.EPERM }
func (noLinkFS) Link(string, string) experimentalsys.Errno    { return experimentalsys.EPERM }

// scratchFS mounts dir read-write without link creation.
func scratchFS(dir string) experimentalsys.FS { return noLinkFS{sysfs.DirFS(dir)} }

// linksStayInside refuses a mount holding a symlink that resolves outside it
// (or does not resolve): wazero follows such links on the host, so one would
// expose files the operator never mounted. Mounts are checked when the tool
// is built; they are the operator's directories, not the guest's.
func linksStayInside(dir string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("symlink %s does not resolve: %w", path, err)
		}
		if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("symlink %s points outside the mount (to %s)", path, target)
		}
		return nil
	})
}
