// Student names in any script: UTF-8 checks, NFC through utf8proc, folder names.
#include "teach/names.hpp"

#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"

TEST_CASE("invalid_utf8_offset finds the first byte that is not UTF-8") {
  CHECK(attn::invalid_utf8_offset("") == std::string_view::npos);
  CHECK(attn::invalid_utf8_offset("Ada 张伟 Łukasz") == std::string_view::npos);
  CHECK(attn::invalid_utf8_offset("Jos\xe9") == 3);        // Latin-1 é
  CHECK(attn::invalid_utf8_offset("ab\xe5\xbc") == 2);     // a cut sequence
  CHECK(attn::invalid_utf8_offset("\xc0\xaf") == 0);       // an overlong '/'
  CHECK(attn::invalid_utf8_offset("x\xed\xa0\x80") == 1);  // a surrogate
}

TEST_CASE("code_point_count counts characters, not bytes") {
  CHECK(attn::code_point_count("") == 0);
  CHECK(attn::code_point_count("Ada") == 3);
  CHECK(attn::code_point_count("张伟") == 2);
  CHECK(attn::code_point_count("Jose\u0301") == 5);  // a combining mark is a code point
  CHECK(attn::code_point_count("\U0001F600") == 1);
}

TEST_CASE("nfc composes, and leaves NFC text byte for byte") {
  CHECK(attn::nfc("Jose\u0301") == "Jos\u00e9");
  CHECK(attn::nfc("Jos\u00e9") == "Jos\u00e9");
  CHECK(attn::nfc("Dvor\u030ca\u0301k") == "Dvo\u0159\u00e1k");
  CHECK(attn::nfc("张伟 Алексей") == "张伟 Алексей");
  CHECK(attn::nfc("") == "");
  CHECK_THROWS_AS(attn::nfc("Jos\xe9"), attn::InputError);
}

TEST_CASE("folder_of keeps letters and digits of any script, lower-cased") {
  CHECK(attn::folder_of("José Núñez") == "josé-núñez");
  CHECK(attn::folder_of("Jose\u0301 Nu\u0301n\u0303ez") == "josé-núñez");  // NFD
  CHECK(attn::folder_of("张伟") == "张伟");
  CHECK(attn::folder_of("O'Brien") == "o-brien");
  CHECK(attn::folder_of("Łukasz Dvořák") == "łukasz-dvořák");
  CHECK(attn::folder_of("Алексей Смирнов") == "алексей-смирнов");
  CHECK(attn::folder_of("  Ana--María  López (2) ") == "ana-maría-lópez-2");
  CHECK(attn::folder_of("देवनागरी") == "देवनागरी");  // combining vowel signs stay
  CHECK(attn::folder_of("!!! ???") == "");
  const std::string folder = attn::folder_of(std::string(200, 'a') + "é");
  CHECK(folder.size() <= attn::kMaxFolderBytes);
  CHECK(folder == std::string(attn::kMaxFolderBytes, 'a'));
}
