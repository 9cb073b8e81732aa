package plugin

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// CheckMountLinks refuses a mount holding a symlink that resolves outside it
// (or does not resolve): wazero resolves guest paths with the host's own path
// walk and follows such links, so one would expose files the operator never
// mounted. Guests cannot add links later: ABI plugins' mounts are read-only
// and command tools' scratch directories refuse link creation. Mounts are the
// operator's directories, checked when a module is loaded.
func CheckMountLinks(dir string) error {
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
