// %VARIANT% a -DX=1
// %VARIANT% a -DX=2
