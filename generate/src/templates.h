// The skeleton's fixed C parts (templates/), built into skelgen so that a
// generated skeleton never depends on where skelgen is installed.
#pragma once

#include <map>
#include <string>

namespace skt::gen {

// The text of templates/<name>; throws std::logic_error for an unknown name.
const std::string& template_text(const std::string& name);

// Replaces every {{KEY}} of `text` by values[KEY]. Throws std::logic_error
// naming the first placeholder without a value (a generator bug).
std::string render(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace skt::gen
