// %VARIANT% bad-name -DX=1
