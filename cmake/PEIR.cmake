# PEIR.cmake — pe_enable_ir(target): builds the target's C sources through
# pecc, the compiler launcher that embeds each translation unit's static IR
# (section pe_ir) so that the PE runtime knows ahead what the program asks
# for.  The program works the same without it, with less foresight.
#
#   find_package(PE)        # or, in PE's own tree, include(cmake/PEIR.cmake)
#   add_executable(app app.c)
#   target_link_libraries(app PRIVATE PE::pe)
#   pe_enable_ir(app)
if(NOT PE_PECC)
  find_program(PE_PECC pecc HINTS "${PE_BIN_DIR}" DOC "PE's compiler launcher")
endif()

function(pe_enable_ir target)
  if(NOT PE_PECC)
    message(WARNING "pe_enable_ir(${target}): pecc not found; building without the static IR")
    return()
  endif()
  set_target_properties(${target} PROPERTIES C_COMPILER_LAUNCHER "${PE_PECC}")
  # A new pecc makes new IR: the objects it made are out of date.
  # (OBJECT_DEPENDS takes no generator expression: PE's own tree names the file.)
  if(NOT PE_PECC_FILE)
    set(PE_PECC_FILE "${PE_PECC}")
  endif()
  get_target_property(sources ${target} SOURCES)
  set_property(SOURCE ${sources} TARGET_DIRECTORY ${target} APPEND PROPERTY OBJECT_DEPENDS "${PE_PECC_FILE}")
endfunction()
