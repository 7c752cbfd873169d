# Writes OUT, a C++ header holding every file in FILES as a string:
#   struct EmbeddedTemplate { const char* name; const char* text; };
#   kTemplates[] = {{"skel_kernel.h", R"...(...)..."}, ...}
# Run with: cmake -DOUT=... -DFILES="a|b" -P embed_templates.cmake
set(body "// Generated from the skeleton templates by cmake/embed_templates.cmake -- do not edit.\n#pragma once\n\n")
string(APPEND body "struct EmbeddedTemplate {\n  const char* name;\n  const char* text;\n};\n\n")
string(APPEND body "static const EmbeddedTemplate kTemplates[] = {\n")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(f IN LISTS FILES)
  file(READ "${f}" text)
  get_filename_component(name "${f}" NAME)
  string(FIND "${text}" ")SKELTPL\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter )SKELTPL\"")
  endif()
  string(APPEND body "    {\"${name}\", R\"SKELTPL(${text})SKELTPL\"},\n")
endforeach()
string(APPEND body "};\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
