# The One Definition Rule check (ATTN_ODR_CHECK=ON; `scripts/test --odr` builds
# it in build-odr/): everything is compiled for link-time optimisation, so that
# at each link GCC sees every translation unit's types and declarations at once
# and -Wodr / -Wlto-type-mismatch report two different definitions under one
# name (for instance two structs attn::CellVerdict in two headers). They are
# errors here: a program with such a violation is undefined and may crash only
# in some build types.

if(ATTN_ODR_CHECK)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(FATAL_ERROR "ATTN_ODR_CHECK needs GCC (its -Wodr link-time check)")
  endif()
  set(odr_flags -flto=auto -Wodr -Werror=odr -Werror=lto-type-mismatch)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${odr_flags}>")  # nvcc takes none of them
  add_link_options(${odr_flags})
  # Static libraries of LTO objects need the archiver with GCC's LTO plugin.
  set(CMAKE_AR ${CMAKE_CXX_COMPILER_AR})
  set(CMAKE_RANLIB ${CMAKE_CXX_COMPILER_RANLIB})
endif()
