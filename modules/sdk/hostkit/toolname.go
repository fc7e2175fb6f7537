package hostkit

// ValidToolName reports whether name is a tool name providers accept (1 to
// 64 ASCII letters, digits, '_' or '-'), the rule ValidateTool applies to
// a declaration; configuration that names tools checks it too.
func ValidToolName(name string) bool { return toolNameRE.MatchString(name) }
